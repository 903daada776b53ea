/// The Lambda side of `passkey` (contract section 15): one POST route, the action in the body.
public struct PasskeyHandler: RequestHandler {
    let flow: PasskeyFlow
    init(flow: PasskeyFlow) { self.flow = flow }

    enum Action: String {
        case registerOptions = "register-options", register, list, delete, loginOptions = "login-options"
    }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let body = RequestBody(request.body)
        let name = try body.requiredString("action", maximumBytes: 32)
        // Off is off for every action, before any caller check.
        _ = try flow.verifier()
        guard let action = Action(rawValue: name) else {
            throw AuthError(.invalidRequest, "action must be register-options, register, list, delete or login-options")
        }
        if action == .loginOptions { return InvocationResponse(body: try flow.loginOptions(origin: request.origin, logger: context.logger).json) }
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        let answer = try caller.attributing { () throws -> JSONValue in
            switch action {
            case .registerOptions: return try flow.registrationOptions(for: caller).json
            case .register: return ["passkey": try flow.register(try PasskeyRegistrationRequest(body), for: caller, logger: context.logger).json]
            case .list: return ["passkeys": .array(try flow.list(for: caller).map(\.json))]
            case .delete:
                try flow.delete(try body.requiredString("passkeyId", maximumBytes: 128), for: caller, logger: context.logger)
                return ["deleted": true]
            case .loginOptions: throw AuthError.internalError("login-options is answered without a caller")
            }
        }
        var response = InvocationResponse(body: answer)
        response.event = SecurityEvent(SecurityEvent.successName(handler: "passkey", request: request, answer: answer),
                                       fields: ["userId": caller.userID, "sessionId": caller.sessionID])
        return response
    }
}

extension PasskeyRegistrationRequest {
    init(_ body: RequestBody) throws(AuthError) {
        guard let credential = try body.optionalObject("credential") else { throw AuthError(.invalidRequest, "credential is required") }
        name = try body.optionalString("name", maximumBytes: 64, emptyIsAbsent: true) ?? "Passkey"
        response = try RegistrationResponse(credential)
    }
}
