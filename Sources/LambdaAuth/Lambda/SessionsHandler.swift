/// The Lambda side of `sessions` (contract section 7): the list, and revoking one.
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
