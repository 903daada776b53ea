/// `authorizer` (contract section 20): an API Gateway Lambda authorizer for our access tokens.
/// A token passes when it passes API Gateway's JWT authorizer rules (`GatewayJWTRules`, the same
/// code serve's JWT authorizer runs) and neither its `sid` nor its `sub` is on the revocation
/// list, which this process reads from the table at most every 5 s (`RevocationCache`): so a
/// sign-out ends its access tokens within seconds, with no table read per request.
///
/// Answers as API Gateway reads them (AWS, "Working with AWS Lambda authorizers for HTTP APIs" and
/// "Input to / Output from an API Gateway Lambda authorizer"):
/// - HTTP API, payload 2.0, simple responses: `{"isAuthorized", "context": {"sub", "sid", "aal"?}}`;
///   a refusal is `{"isAuthorized": false}` (API Gateway answers 403);
/// - REST API, `TOKEN` and `REQUEST`: an IAM policy allowing or denying `execute-api:Invoke` on the
///   `methodArn`, `principalId` = `sub`, the same `context`. A refusal is a Deny policy (403) rather
///   than the `Unauthorized` function error, which a Lambda process cannot answer as a response.
/// A request with no token never gets here: API Gateway answers 401 itself when the identity
/// source is missing.
public struct AuthorizerHandler: RequestHandler {
    let rules: GatewayJWTRules
    let keys: @Sendable () throws(AuthError) -> [JSONWebKey]
    /// Public for counting: the promise is no table read per request.
    public let revocations: RevocationCache
    let clock: any WallClock

    public init(rules: GatewayJWTRules, keys: @escaping @Sendable () throws(AuthError) -> [JSONWebKey], revocations: RevocationCache,
                clock: any WallClock) {
        self.rules = rules
        self.keys = keys
        self.revocations = revocations
        self.clock = clock
    }

    /// The event's shape, which decides the answer's.
    enum EventShape: Equatable {
        case httpAPI
        case rest(methodArn: String)
    }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        guard request.kind == .authorizer else {
            throw AuthError(.invalidRequest, "the authorizer takes API Gateway's authorizer events (TOKEN or REQUEST)")
        }
        let event = request.body
        let shape: EventShape
        let authorization: String?
        if event["version"]?.stringValue == "2.0", event["routeArn"]?.stringValue != nil {
            shape = .httpAPI
            authorization = request.headers["authorization"] ?? event["identitySource"]?.arrayValue?.first?.stringValue
        } else if let methodArn = event["methodArn"]?.stringValue {
            shape = .rest(methodArn: methodArn)
            authorization = event["type"]?.stringValue == "TOKEN" ? event["authorizationToken"]?.stringValue : request.headers["authorization"]
        } else {
            throw AuthError(.invalidRequest, "an HTTP API authorizer event needs version 2.0 and routeArn; a REST one, methodArn")
        }
        let verdict = try decide(authorization: authorization)
        var response = InvocationResponse(body: AuthorizerHandler.answer(verdict, shape: shape))
        switch verdict {
        case .allow(let claims):
            response.event = SecurityEvent("authorizer", fields: ["userId": claims.sub, "sessionId": claims.sid])
        case .deny(let code, let claims):
            var fields = ["code": code.rawValue]
            fields["userId"] = claims?.sub
            fields["sessionId"] = claims?.sid
            response.event = SecurityEvent("authorizer_failed", fields: fields)
            context.logger.info("token refused", metadata: ["code": .string(code.rawValue)])
        }
        return response
    }

    /// What the context carries of a token that passed.
    struct Subject: Equatable {
        var sub: String
        var sid: String
        var aal: JSONValue?
    }

    enum Verdict: Equatable {
        case allow(Subject)
        case deny(ErrorCode, Subject?)
    }

    /// A failure to read the list past its 60 s of grace is thrown (the invocation fails, API
    /// Gateway answers 500): refusing every token quietly would look like a mass sign-out.
    func decide(authorization: String?) throws(AuthError) -> Verdict {
        guard let token = GatewayJWTRules.token(authorization: authorization),
              let claims = rules.claims(token: token, keys: try keys(), now: clock.nowSeconds) else {
            return .deny(.accessTokenInvalid, nil)
        }
        // Our tokens always carry both; a token without them is not one of ours to let through.
        guard let sub = claims["sub"]?.stringValue, let sid = claims["sid"]?.stringValue else { return .deny(.accessTokenInvalid, nil) }
        let subject = Subject(sub: sub, sid: sid, aal: claims["aal"])
        if try revocations.current().revokes(userID: sub, sessionID: sid) { return .deny(.accessTokenRevoked, subject) }
        return .allow(subject)
    }

    static func answer(_ verdict: Verdict, shape: EventShape) -> JSONValue {
        var context: [String: JSONValue] = [:]
        if case .allow(let subject) = verdict {
            context = ["sub": .string(subject.sub), "sid": .string(subject.sid)]
            // Context values must be strings, numbers or booleans.
            if let aal = subject.aal, aal.stringValue != nil || aal.int64Value != nil { context["aal"] = aal }
        }
        let allowed = context.isEmpty == false
        switch shape {
        case .httpAPI:
            return allowed ? ["isAuthorized": true, "context": .object(context)] : ["isAuthorized": false]
        case .rest(let methodArn):
            var answer: [String: JSONValue] = [
                "principalId": .string(context["sub"]?.stringValue ?? "unauthorized"),
                "policyDocument": ["Version": "2012-10-17", "Statement": [[
                    "Action": "execute-api:Invoke", "Effect": .string(allowed ? "Allow" : "Deny"), "Resource": .string(methodArn),
                ]]],
            ]
            if allowed { answer["context"] = .object(context) }
            return .object(answer)
        }
    }
}
