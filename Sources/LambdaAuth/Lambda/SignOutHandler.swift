/// The Lambda side of `signout` (contract section 7).
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

extension SignOutScope {
    static func parse(_ text: String?) throws(AuthError) -> SignOutScope {
        guard let text else { return .session }
        guard let scope = SignOutScope(rawValue: text) else {
            throw AuthError(.invalidRequest, "scope must be session, others or global")
        }
        return scope
    }
}
