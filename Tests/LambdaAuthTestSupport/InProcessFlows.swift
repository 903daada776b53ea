import LambdaAuth
import Logging

/// The world's handlers over a `RecordingTable`, their services built once, so a test can count
/// (and refuse) the requests each flow makes against the local store, as the DynamoDB proxy does
/// on moto.
public struct InProcessFlows: Sendable {
    public let table: RecordingTable
    public let services: AuthServices

    /// On the world's store, its fixed clock (AUTH_NOW) and, when given, reproducible randomness.
    public init(_ world: FlowWorld, refusingQueriesOn index: String? = nil, random: (any RandomSource)? = nil) throws {
        table = RecordingTable(try world.table(), refusingQueriesOn: index)
        services = try AuthServices(configuration: try AuthConfiguration.fromEnvironment(world.environment),
                                    logger: Logger.jsonLines(level: .error), table: table, random: random ?? SystemRandomSource(),
                                    sleeper: RecordingSleeper())
    }

    static let context = InvocationContext(requestID: "in-process", logger: Logger.jsonLines(level: .error))

    /// The handler as its executable composes it, on this world's services.
    public func handler(_ entry: HandlerEntry) throws(AuthError) -> any RequestHandler {
        try entry.compose(services)
    }

    /// Runs a handler on a direct event in this process; a contract error is thrown as AuthError.
    func invoke(_ handler: any RequestHandler, _ fields: [String: JSONValue], method: String = "POST") throws(AuthError) -> JSONValue {
        do {
            return try handler.handle(InvocationRequest(kind: .direct, method: method, body: fields), context: InProcessFlows.context).body
        } catch {
            throw AuthError.from(error)
        }
    }

    public func signIn(_ provider: ProviderName = .google, idToken: String) throws(AuthError) -> JSONValue {
        try invoke(try handler(HandlerCatalogue.signin), ["provider": .string(provider.rawValue), "idToken": .string(idToken)])
    }

    public func refresh(_ refreshToken: String) throws(AuthError) -> JSONValue {
        try invoke(try handler(HandlerCatalogue.refresh), ["refreshToken": .string(refreshToken)])
    }

    public func signOut(_ fields: [String: JSONValue]) throws(AuthError) -> JSONValue {
        try invoke(try handler(HandlerCatalogue.signout), fields)
    }

    public func sessions(_ fields: [String: JSONValue], method: String = "POST") throws(AuthError) -> JSONValue {
        try invoke(try handler(HandlerCatalogue.sessions), fields, method: method)
    }

    public func deleteAccount(_ fields: [String: JSONValue]) throws(AuthError) -> JSONValue {
        try invoke(try handler(HandlerCatalogue.deleteAccount), fields)
    }

    public func linkProvider(_ fields: [String: JSONValue], method: String = "POST") throws(AuthError) -> JSONValue {
        try invoke(try handler(HandlerCatalogue.linkProvider), fields, method: method)
    }
}
