/// The Lambda side of `signin`: the event turned into the flow's typed request (the method check and
/// the caller's bearer token live in RequestChecks.swift, once) and the flow's result into the
/// contract's response body. The flows know nothing of events.
public struct SignInHandler: RequestHandler {
    let flow: SignInFlow
    init(flow: SignInFlow) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let result = try flow.signIn(SignInRequest(body: RequestBody(request.body), origin: request.origin,
                                                   hookRequest: HookRequest(request, context: context)), logger: context.logger)
        return InvocationResponse(body: [
            "user": result.user.json, "isNewUser": .bool(result.isNewUser), "session": result.session.json,
            "tokens": result.tokens.json, "credentials": result.tokens.credentials.json,
        ])
    }
}

extension SignInRequest {
    /// The optional `device` object of a sign-in (any provider, guests included).
    static func device(_ body: RequestBody) throws(AuthError) -> [String: String] {
        var device: [String: String] = [:]
        if let deviceBody = try body.optionalObject("device") {
            for field in ["id", "name", "platform"] {
                if let value = try deviceBody.optionalString(field, maximumBytes: 256, emptyIsAbsent: true) {
                    device[field] = value
                }
            }
        }
        return device
    }
}
