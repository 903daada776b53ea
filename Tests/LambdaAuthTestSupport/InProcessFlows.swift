import LambdaAuth

/// The world's flows run in this process over a `RecordingTable`, so a test can count (and
/// refuse) the requests each flow makes against the local store, as the DynamoDB proxy does for
/// whole handler processes on moto.
public struct InProcessFlows: Sendable {
    public let table: RecordingTable
    public let services: AuthServices

    public init(_ world: FlowWorld, refusingQueriesOn index: String? = nil) throws {
        table = RecordingTable(try world.table(), refusingQueriesOn: index)
        services = try AuthServices(configuration: try AuthConfiguration.fromEnvironment(world.environment),
                                    logger: Logger(minimumLevel: .error), table: table)
    }

    static let logger = Logger(minimumLevel: .error)

    public func signIn(_ provider: ProviderName = .google, idToken: String) throws(AuthError) -> JSONValue {
        try SignInFlow(services: services).handle(RequestBody(["provider": .string(provider.rawValue), "idToken": .string(idToken)]),
                                                  logger: InProcessFlows.logger).body
    }

    public func refresh(_ refreshToken: String) throws(AuthError) -> JSONValue {
        try RefreshFlow(services: services).handle(RequestBody(["refreshToken": .string(refreshToken)]), logger: InProcessFlows.logger).body
    }

    public func linkProvider(_ fields: [String: JSONValue], method: String = "POST") throws(AuthError) -> JSONValue {
        try LinkProviderFlow(services: services).handle(InvocationRequest(kind: .direct, method: method, body: fields),
                                                        logger: InProcessFlows.logger).body
    }
}
