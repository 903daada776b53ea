/// The Lambda side of `passkey` (contract section 15): one POST route, the action in the body.
public struct PasskeyHandler: RequestHandler {
    let flow: PasskeyFlow
    init(flow: PasskeyFlow) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let body = RequestBody(request.body)
        let action = try body.requiredString("action", maximumBytes: 32)
        // Off is off for every action, before any caller check.
        _ = try flow.verifier()
        if action == "login-options" { return InvocationResponse(body: try flow.loginOptions(origin: request.origin, logger: context.logger)) }
        guard ["register-options", "register", "list", "delete"].contains(action) else {
            throw AuthError(.invalidRequest, "action must be register-options, register, list, delete or login-options")
        }
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        let answer = try caller.attributing { () throws -> JSONValue in
            switch action {
            case "register-options": return try flow.registrationOptions(for: caller)
            case "register": return try flow.register(body, for: caller, logger: context.logger)
            case "list": return try flow.list(for: caller)
            default: return try flow.delete(try body.requiredString("passkeyId", maximumBytes: 128), for: caller, logger: context.logger)
            }
        }
        var response = InvocationResponse(body: answer)
        response.event = SecurityEvent(SecurityEvent.successName(handler: "passkey", request: request, answer: answer),
                                       fields: ["userId": caller.userID, "sessionId": caller.sessionID])
        return response
    }
}
