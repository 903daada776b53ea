/// `otp-start` (contract section 10): `{"email"}` → 202 `{"sent": true, "expiresIn": N}`, the
/// same for every valid address. Rate limits count the HTTP events' source IP (required there); a
/// direct invocation has none and is limited per address only.
public struct OneTimeCodeStartHandler: RequestHandler {
    let flow: Result<OneTimeCodeFlow, AuthError>
    init(flow: Result<OneTimeCodeFlow, AuthError>) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let flow = try flow.get()
        try flow.requireEnabled()
        let email = try EmailAddress(try RequestBody(request.body).requiredString("email", maximumBytes: 254))
        let expiresIn = try flow.start(email, origin: request.origin, logger: context.logger)
        return InvocationResponse(status: 202, body: ["sent": true, "expiresIn": .number(expiresIn)])
    }
}
