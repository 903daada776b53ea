/// The Lambda side of `signout`, `sessions` and `delete-account` (contract section 7).
public struct SignOutHandler: RequestHandler {
    let flow: SignOutFlow
    init(flow: SignOutFlow) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let body = RequestBody(request.body)
        let scope = try SignOutScope.parse(body.optionalString("scope", maximumBytes: 16, emptyIsAbsent: true))
        let outcome: SignOutFlow.Outcome
        if let accessToken = try request.presentedCallerToken() {
            outcome = try flow.signOut(accessToken: accessToken, scope: scope, logger: context.logger)
        } else if !request.body.keys.contains("refreshToken") {
            outcome = try flow.signOut(accessToken: try request.callerToken(), scope: scope, logger: context.logger)
        } else {
            let refreshToken = try body.requiredString("refreshToken", maximumBytes: 1024)
            outcome = try flow.signOut(refreshToken: refreshToken, scope: scope, logger: context.logger)
        }
        var response = InvocationResponse(body: ["revokedSessions": .number(Int64(outcome.revokedSessions))])
        response.event = SecurityEvent("signout", fields: ["userId": outcome.userID, "sessionId": outcome.sessionID])
        return response
    }
}

public struct SessionsHandler: RequestHandler {
    let flow: SessionsFlow
    init(flow: SessionsFlow) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("GET", "POST", "DELETE", hint: "use GET to list or DELETE to revoke a session")
        let body = RequestBody(request.body)
        let revoking: Bool
        switch request.method {
        case "GET": revoking = false
        case "DELETE": revoking = true
        default:
            switch try body.optionalString("action", maximumBytes: 16) {
            case nil, "list"?: revoking = false
            case "revoke"?: revoking = true
            default: throw AuthError(.invalidRequest, "action must be list or revoke")
            }
        }
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        return try caller.attributing { try answer(revoking: revoking, body: body, caller: caller, context: context) }
    }

    private func answer(revoking: Bool, body: RequestBody, caller: Caller, context: InvocationContext) throws -> InvocationResponse {
        guard revoking else {
            let sessions = try flow.list(for: caller)
            var response = InvocationResponse(body: ["sessions": .array(sessions.map(\.json))])
            response.event = SecurityEvent("sessions", fields: ["userId": caller.userID, "sessionId": caller.sessionID])
            return response
        }
        let sessionID = try body.requiredString("sessionId", maximumBytes: 128)
        var response = InvocationResponse(body: ["revokedSessions": .number(Int64(try flow.revoke(sessionID, for: caller, logger: context.logger)))])
        // The session acted on, not the caller's own.
        response.event = SecurityEvent("session_revoked", fields: ["userId": caller.userID, "sessionId": sessionID])
        return response
    }
}

public struct DeleteAccountHandler: RequestHandler {
    let flow: DeleteAccountFlow
    let testMode: Bool
    let providers: ProviderRegistry
    init(flow: DeleteAccountFlow, providers: ProviderRegistry, testMode: Bool) {
        self.flow = flow
        self.providers = providers
        self.testMode = testMode
    }

    /// The fields that carry a proof of identity; a request with none of them presents no proof.
    static let proofFields = ["idToken", "code", "credential"]

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST", "DELETE", hint: "use POST or DELETE")
        let body = RequestBody(request.body)
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        return try caller.attributing {
            var proof: ProvenIdentity?
            let presented = Self.proofFields.contains { body.fields[$0].map { $0 != .string("") && $0 != .null } ?? false }
            if presented {
                // The proof's own provider checks it: an ID token, an email-only user's fresh code.
                proof = try providers.entry(for: body).prove(body, logger: context.logger)
            }
            let interrupt = testMode && request.body["_testFault"] == "interrupt-deletion"
            let userID = try flow.delete(for: caller, proof: proof, interruptAfterMark: interrupt, logger: context.logger)
            return InvocationResponse(body: ["deleted": true, "userId": .string(userID)])
        }
    }
}

extension SignOutScope {
    static func parse(_ text: String?) throws(AuthError) -> SignOutScope {
        guard let text else { return .session }
        guard let scope = SignOutScope(rawValue: text) else {
            throw AuthError(.invalidRequest, "scope must be session, others or global")
        }
        return scope
    }
}
