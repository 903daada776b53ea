/// The Lambda side of the account flows: each handler turns an event into the flow's typed
/// request (the method check and the caller's bearer token live here, once) and the flow's
/// result into the contract's response body. The flows know nothing of events.
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

public struct RefreshHandler: RequestHandler {
    let flow: RefreshFlow
    init(flow: RefreshFlow) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let presented = try RequestBody(request.body).requiredString("refreshToken", maximumBytes: 1024)
        let result = try flow.refresh(presented, logger: context.logger)
        let session: JSONValue = ["id": .string(result.sessionID), "createdAt": .string(Timestamps.format(result.sessionCreatedAt))]
        return InvocationResponse(body: [
            "user": result.user, "session": session, "tokens": result.tokens.json, "credentials": result.tokens.credentials.json,
        ])
    }
}

public struct LinkProviderHandler: RequestHandler {
    let flow: LinkProviderFlow
    let providers: ProviderRegistry
    init(flow: LinkProviderFlow, providers: ProviderRegistry) {
        self.flow = flow
        self.providers = providers
    }

    enum Action { case link, unlink }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        let body = RequestBody(request.body)
        let action = try LinkProviderHandler.action(of: request, body: body)
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        let user = try caller.attributing { () throws -> UserView in
            switch action {
            case .link:
                let entry = try providers.entry(for: body)
                guard let proven = try entry.prove(body, logger: context.logger) else {
                    throw AuthError(.unsupportedProvider, "provider \(entry.name) proves no identity to link")
                }
                return try flow.link(proven.identity, for: caller, logger: context.logger)
            case .unlink:
                let provider = try providers.identityProvider(named: try body.requiredString("provider", maximumBytes: 64))
                return try flow.unlink(provider, for: caller, logger: context.logger)
            }
        }
        var response = InvocationResponse(body: ["user": user.json])
        // The caller's session is the one acted through; a guest's first identity makes it a user.
        let upgraded = action == .link && caller.user.profile.isGuest && !user.profile.isGuest
        response.event = SecurityEvent(upgraded ? "guest_upgraded" : action == .link ? "identity_linked" : "identity_unlinked",
                                       fields: ["userId": caller.userID, "sessionId": caller.sessionID])
        return response
    }

    /// POST links (or unlinks with `"action": "unlink"`, for direct invocations); DELETE unlinks.
    static func action(of request: InvocationRequest, body: RequestBody) throws(AuthError) -> Action {
        try request.requireMethod("POST", "DELETE", hint: "use POST to link or DELETE to unlink")
        if request.method == "DELETE" { return .unlink }
        switch try body.optionalString("action", maximumBytes: 16) {
        case nil, "link"?: return .link
        case "unlink"?: return .unlink
        default: throw AuthError(.invalidRequest, "action must be link or unlink")
        }
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

extension InvocationRequest {
    /// HTTP events must use one of `methods`; direct invocations count as POST.
    func requireMethod(_ methods: String..., hint: String? = nil) throws(AuthError) {
        guard methods.contains(method) else {
            throw AuthError(.invalidRequest, "method \(method) is not supported; \(hint ?? "use " + methods.joined(separator: " or "))")
        }
    }

    /// The caller's access token: `Authorization: Bearer …` on HTTP events, `accessToken` on
    /// direct ones. Whatever is missing or malformed is ACCESS_TOKEN_INVALID.
    func callerToken() throws(AuthError) -> String {
        guard let token = try presentedCallerToken() else {
            throw AuthError(.accessTokenInvalid, kind.isHTTP ? "the Authorization header with a Bearer access token is missing"
                                                             : "accessToken is missing")
        }
        return token
    }

    /// The caller's access token if the request carries one (signout may go by refresh token
    /// instead); one that is there but malformed is ACCESS_TOKEN_INVALID.
    func presentedCallerToken() throws(AuthError) -> String? {
        guard kind.isHTTP else {
            guard body["accessToken"] != nil else { return nil }
            do throws(AuthError) {
                guard let value = try RequestBody(body).optionalString("accessToken", maximumBytes: 8192) else {
                    throw AuthError(.accessTokenInvalid, "accessToken is missing")
                }
                return value
            } catch where error.code == .invalidRequest {
                throw AuthError(.accessTokenInvalid, "accessToken must be a string")
            }
        }
        guard let header = headers["authorization"] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw AuthError(.accessTokenInvalid, "the Authorization header must be 'Bearer <access token>'")
        }
        return String(parts[1]).trimmingCharacters(in: " ")
    }
}
