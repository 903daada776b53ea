import LambdaAuth

/// Every handler executable, in the catalogue's order: what authctl can invoke and replay, what
/// the tests run for every handler, what the bench measures.
public enum HandlerNames {
    public static let all = HandlerCatalogue.all.map(\.name)
}
