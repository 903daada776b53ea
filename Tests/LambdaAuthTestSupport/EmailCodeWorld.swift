import LambdaAuth
import LambdaAuthTooling
import Logging

/// Email codes on a FlowWorld: the world's environment with AUTH_EMAIL on and its own outbox, and
/// the in-process calls of `otp-start` and `signin`/`link-provider` with provider `email`.
public struct EmailCodeWorld: Sendable {
    public let world: FlowWorld
    public let flows: InProcessFlows
    public var outbox: String { world.directory + "/outbox" }

    /// 32 fixed bytes: AUTH_OTP_KEY, which `dynamodb:` requires.
    public static let otpKey = Base64.encoded([UInt8](repeating: 7, count: 32))

    public static func environment(_ directory: String? = nil) -> [String: String] {
        var environment = ["AUTH_EMAIL": "on", "AUTH_OTP_KEY": otpKey]
        if let directory { environment["AUTH_EMAIL_SENDER"] = "outbox:\(directory)/outbox" }
        return environment
    }

    public init(_ backend: FlowWorld.Backend, _ extra: [String: String] = [:]) throws {
        world = try FlowWorld(EmailCodeWorld.environment().merging(extra) { $1 }, backend: backend)
        // The outbox lives in the world's directory, removed with it.
        world.setEnvironment("AUTH_EMAIL_SENDER", extra["AUTH_EMAIL_SENDER"] ?? "outbox:\(world.directory)/outbox")
        flows = try InProcessFlows(world)
    }

    public init(world: FlowWorld, flows: InProcessFlows) {
        self.world = world
        self.flows = flows
    }

    /// The same world with handlers built again from its environment (after `setEnvironment` or a clock change).
    public func reopened() throws -> EmailCodeWorld {
        EmailCodeWorld(world: world, flows: try InProcessFlows(world))
    }

    static let context = InvocationContext(requestID: "email-code-test", logger: Logger.jsonLines(level: .error))

    func call(_ entry: HandlerEntry, _ body: [String: JSONValue], sourceIP: String?) -> Result<InvocationResponse, AuthError> {
        let request = InvocationRequest(kind: sourceIP == nil ? .direct : .httpAPIv2, body: body, sourceIP: sourceIP)
        do {
            return .success(try flows.handler(entry).handle(request, context: Self.context))
        } catch {
            return .failure(AuthError.from(error))
        }
    }

    /// `otp-start` in this process (an HTTP API event from `sourceIP`, or a direct invocation).
    public func start(_ email: String, sourceIP: String? = nil) -> Result<InvocationResponse, AuthError> {
        call(HandlerCatalogue.otpStart, ["email": .string(email)], sourceIP: sourceIP)
    }

    public func signIn(_ email: String, code: String) -> Result<JSONValue, AuthError> {
        call(HandlerCatalogue.signin, ["provider": "email", "email": .string(email), "code": .string(code)], sourceIP: nil).map(\.body)
    }

    public func link(_ email: String, code: String, accessToken: String) -> Result<JSONValue, AuthError> {
        call(HandlerCatalogue.linkProvider,
             ["provider": "email", "email": .string(email), "code": .string(code), "accessToken": .string(accessToken)],
             sourceIP: nil).map(\.body)
    }

    /// The code of the newest message to `email`.
    public func latestCode(_ email: String) -> String? { Outbox.latestCode(to: email, in: outbox) }
}
