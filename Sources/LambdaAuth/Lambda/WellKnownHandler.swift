/// The Lambda side of `well-known` (contract section 11): GET `/.well-known/openid-configuration`
/// and GET `/.well-known/jwks.json` on HTTP events (the path may sit under a stage or base path),
/// `{"document": "openid-configuration" | "jwks"}` on direct invocations. Both are cacheable for
/// `DiscoveryDocuments.cacheSeconds`; errors stay `no-store`.
///
/// GET `/.well-known/revocations` (`{"document": "revocations"}`) is the signed revocation list
/// (contract section 20): `application/jwt`, `max-age=5`, read from the table on every request.
public struct WellKnownHandler: RequestHandler {
    let documents: DiscoveryDocuments
    let keys: @Sendable () throws(AuthError) -> AccessTokenKeySet?
    let revocations: @Sendable () throws(AuthError) -> String

    init(documents: DiscoveryDocuments, keys: @escaping @Sendable () throws(AuthError) -> AccessTokenKeySet?,
         revocations: @escaping @Sendable () throws(AuthError) -> String) {
        self.documents = documents
        self.keys = keys
        self.revocations = revocations
    }

    public static let revocationsPath = "/.well-known/revocations"

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        if Self.asksForRevocations(request) {
            let list = try revocations()
            var response = InvocationResponse(body: .string(list),
                                              headers: ["content-type": "application/jwt",
                                                        "cache-control": "public, max-age=\(RevocationDocument.maximumAge)"])
            response.rawBody = list
            return response
        }
        let document = try Self.document(of: request)
        return InvocationResponse(body: documents.document(document, keys: try keys()),
                                  headers: ["cache-control": "public, max-age=\(DiscoveryDocuments.cacheSeconds)"])
    }

    static func asksForRevocations(_ request: InvocationRequest) -> Bool {
        guard request.kind.isHTTP else { return request.body["document"]?.stringValue == "revocations" }
        return request.method == "GET" && request.path.hasSuffix(revocationsPath)
    }

    static func document(of request: InvocationRequest) throws(AuthError) -> DiscoveryDocuments.Document {
        let names = DiscoveryDocuments.Document.allCases
        guard request.kind.isHTTP else {
            guard let name = try RequestBody(request.body).optionalString("document", maximumBytes: 64) else {
                throw AuthError(.invalidRequest, "document is missing; ask for \(names.map(\.rawValue).joined(separator: " or "))")
            }
            guard let document = DiscoveryDocuments.Document(rawValue: name) else {
                throw AuthError(.notFound, "there is no document \(name); ask for \(names.map(\.rawValue).joined(separator: " or "))")
            }
            return document
        }
        try request.requireMethod("GET")
        guard let document = names.first(where: { request.path.hasSuffix($0.path) }) else {
            throw AuthError(.notFound, "nothing is served at \(request.path.prefix(200)); the documents are at \(names.map(\.path).joined(separator: " and "))")
        }
        return document
    }
}
