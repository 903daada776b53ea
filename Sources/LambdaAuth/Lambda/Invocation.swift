import Logging

/// How the event reached us; decides the shape of the response (contract section 2).
public enum EventKind: String, Sendable {
    case httpAPIv2
    case restAPIv1
    case direct
    /// An API Gateway Lambda authorizer's event (HTTP API payload 2.0, REST TOKEN or REQUEST):
    /// answered with the body itself, as API Gateway reads it.
    case authorizer

    public var isHTTP: Bool { self == .httpAPIv2 || self == .restAPIv1 }
}

/// One decoded invocation: what every handler works from, whatever the event kind.
public struct InvocationRequest: Sendable {
    public var kind: EventKind
    /// Upper-case HTTP method; `POST` for direct invocations.
    public var method: String
    /// Header names lowercased (HTTP matching is case-insensitive).
    public var headers: [String: String]
    /// The request body, already checked to be a JSON object.
    public var body: [String: JSONValue]
    /// The HTTP path (`rawPath`, or the REST API's `path`); empty for direct invocations.
    public var path: String
    /// The client's address as API Gateway or the function URL saw it, unchecked (`origin` checks
    /// it); nil for direct invocations (another AWS service or an operator, not a client on the
    /// internet) and for HTTP events without a string there.
    public var sourceIP: String?

    public init(kind: EventKind, method: String = "POST", headers: [String: String] = [:], body: [String: JSONValue],
                path: String = "", sourceIP: String? = nil) {
        self.kind = kind
        self.method = method
        self.headers = headers
        self.body = body
        self.path = path
        self.sourceIP = sourceIP
    }
}

public struct InvocationResponse: Sendable {
    public var status: Int
    public var body: JSONValue
    /// HTTP headers that replace or join the defaults (`cache-control: no-store`), lowercase
    /// names; HTTP events only (a direct invocation's response is the body itself).
    public var headers: [String: String]
    /// The request's security event when the handler knows it better than its answer tells
    /// (`SecurityEvent.of`): a link that upgraded a guest, the user a sign-out acted for.
    public var event: SecurityEvent?
    /// A failure's `userId` and `sessionId`, where it knew them (`AuthError.about`): what the
    /// event line says of a refused request beside its code.
    public var failureSubject: [String: String] = [:]
    /// Over HTTP, the body as it is rather than as JSON text (a compact JWS served as
    /// `application/jwt`); a direct invocation still gets `body`.
    public var rawBody: String?

    public init(status: Int = 200, body: JSONValue, headers: [String: String] = [:]) {
        self.status = status
        self.body = body
        self.headers = headers
    }

    public init(error: AuthError) {
        self.status = error.status
        self.body = error.body
        self.headers = [:]
        if let retryAfter = error.retryAfter { headers["retry-after"] = String(retryAfter) }
        if let userID = error.userID { failureSubject["userId"] = userID }
        if let sessionID = error.sessionID { failureSubject["sessionId"] = sessionID }
    }
}

/// What a handler knows about the invocation it serves.
public struct InvocationContext: Sendable {
    public var requestID: String
    public var logger: Logger
    /// Epoch milliseconds by which Lambda wants the answer (the Runtime API's deadline), if known.
    public var deadlineMilliseconds: Int64?
    /// The hooks this invocation called, for its event line (contract section 19).
    public var hooks: HookLedger

    public init(requestID: String, logger: Logger, deadlineMilliseconds: Int64? = nil, hooks: HookLedger = HookLedger()) {
        self.requestID = requestID
        self.logger = logger
        self.deadlineMilliseconds = deadlineMilliseconds
        self.hooks = hooks
    }
}

/// A handler turns one request into one response. Contract errors are thrown as AuthError and
/// become ordinary responses; anything else is unexpected.
public protocol RequestHandler: Sendable {
    func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse
}
