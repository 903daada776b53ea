/// The Lambda side of `signin`: the event turned into the flow's typed request (the method check and
/// the caller's bearer token live in RequestChecks.swift, once) and the flow's result into the
/// contract's response body. The flows know nothing of events.
public struct SignInHandler: RequestHandler {
    let providers: ProviderRegistry
    init(providers: ProviderRegistry) {
        self.providers = providers
    }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let body = RequestBody(request.body)
        // The provider first: a mistyped one ("Guest") is named as such, not as a missing token.
        let result = try providers.entry(for: body).signIn(body, request: request, logger: context.logger)
        return InvocationResponse(body: [
            "user": result.user.json, "isNewUser": .bool(result.isNewUser), "session": result.session.json,
            "tokens": result.tokens.json, "credentials": result.tokens.credentials.json,
        ])
    }
}

extension SignInRequest {
    /// An ID-token sign-in of `provider` (its registry entry chose it).
    init(_ body: RequestBody, provider: ProviderName) throws(AuthError) {
        self.provider = provider
        idToken = try body.requiredString("idToken", maximumBytes: 16 << 10)
        nonce = try body.optionalString("nonce", maximumBytes: 1024, emptyIsAbsent: true)
        device = try SignInRequest.device(body)
        profileName = try body.optionalObject("profile")?.optionalString("name", maximumBytes: 256, emptyIsAbsent: true)
        // An empty code is refused, not ignored: a sign-in without Apple's grant leaves nothing
        // for the account's deletion to revoke at Apple.
        authorizationCode = try body.optionalString("authorizationCode", maximumBytes: 4096)
        if authorizationCode != nil, provider != .apple {
            throw AuthError(.invalidRequest, "authorizationCode is accepted with provider apple only")
        }
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
