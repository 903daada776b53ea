import Logging

/// What a sign-in, link or re-authentication request offers as proof of who it is, and what it
/// proves (contract sections 3, 8, 9, 10, 14).
struct ProvenIdentity: Sendable {
    var identity: VerifiedIdentity
    /// An ID token: it can be weeks old for a sign-in but must be fresh to re-authenticate. An
    /// email code is checked when it is used and lives AUTH_OTP_TTL: fresh as it is.
    var isOneTimeProof: Bool
}

/// One way of signing in, as a value: a request's proof in, a verified identity (or, for guests,
/// a new anonymous user) out. Sign-in, link and re-authentication ask the registry for the entry
/// a request names and never switch on provider names themselves, so a new provider is a new
/// entry (README.md, "Adding a provider").
protocol SignInProvider: Sendable {
    var name: String { get }
    /// The identity a link or a re-authentication proves; nil: this provider proves none (a guest).
    func prove(_ body: RequestBody, logger: Logger) throws(AuthError) -> ProvenIdentity?
    /// A sign-in with this provider: the user found or created, with a new session.
    func signIn(_ body: RequestBody, request: InvocationRequest, logger: Logger) throws(AuthError) -> SignInResult
}

/// An ID token of a provider: Google, Apple (with its authorization code and one-time name) or a
/// provider of AUTH_OIDC_PROVIDERS; all verified by the same `IDTokenVerifier`.
struct IDTokenSignIn: SignInProvider {
    let provider: ProviderName
    let flow: SignInFlow
    let verifier: any IdentityVerifying

    var name: String { provider.rawValue }

    func prove(_ body: RequestBody, logger: Logger) throws(AuthError) -> ProvenIdentity? {
        let idToken = try body.requiredString("idToken", maximumBytes: 16 << 10)
        let nonce = try body.optionalString("nonce", maximumBytes: 1024, emptyIsAbsent: true)
        return ProvenIdentity(identity: try verifier.verify(idToken, provider: provider, nonce: nonce), isOneTimeProof: false)
    }

    func signIn(_ body: RequestBody, request: InvocationRequest, logger: Logger) throws(AuthError) -> SignInResult {
        try flow.signIn(try SignInRequest(body, provider: provider), logger: logger)
    }
}

/// An address proven by a one-time code (contract section 10).
struct EmailCodeSignIn: SignInProvider {
    let flow: SignInFlow
    let oneTimeCodes: Result<OneTimeCodeFlow, AuthError>

    var name: String { ProviderName.email.rawValue }

    func prove(_ body: RequestBody, logger: Logger) throws(AuthError) -> ProvenIdentity? {
        ProvenIdentity(identity: try oneTimeCodes.get().verify(body, logger: logger), isOneTimeProof: true)
    }

    func signIn(_ body: RequestBody, request: InvocationRequest, logger: Logger) throws(AuthError) -> SignInResult {
        let identity = try oneTimeCodes.get().verify(body, logger: logger)
        let signIn = SignInRequest(provider: .email, idToken: "", nonce: nil, device: try SignInRequest.device(body), profileName: nil)
        let result = try flow.findOrCreateUser(identity, request: signIn, logger: logger)
        logger.info("signed in", metadata: ["userId": .string(result.user.profile.userID), "sessionId": .string(result.session.sessionID),
                                            "provider": .string(identity.provider.rawValue), "newUser": .bool(result.isNewUser)])
        return result
    }
}

/// A new anonymous user (contract section 9): no identity to prove, link or re-authenticate with.
struct GuestSignIn: SignInProvider {
    let guests: GuestSignInFlow

    var name: String { GuestSignInFlow.providerName }

    func prove(_ body: RequestBody, logger: Logger) throws(AuthError) -> ProvenIdentity? { nil }

    func signIn(_ body: RequestBody, request: InvocationRequest, logger: Logger) throws(AuthError) -> SignInResult {
        // A client that sends a token believes it signs someone in: never a silent guest.
        guard body.fields["idToken"] == nil, body.fields["authorizationCode"] == nil else {
            throw AuthError(.invalidRequest, "provider guest takes no idToken or authorizationCode")
        }
        return try guests.signIn(device: try SignInRequest.device(body), origin: request.origin, logger: logger)
    }
}

/// Every sign-in provider of a deployment, by name: the built-ins and the configured OpenID
/// Connect providers. A list, not a dictionary: it is short, and read once per request.
struct ProviderRegistry: Sendable {
    let entries: [any SignInProvider]

    /// The entry `body`'s `provider` names; UNSUPPORTED_PROVIDER for any other name.
    func entry(for body: RequestBody) throws(AuthError) -> any SignInProvider {
        try entry(named: try body.requiredString("provider", maximumBytes: 64))
    }

    func entry(named name: String) throws(AuthError) -> any SignInProvider {
        guard let entry = entries.first(where: { $0.name == name }) else {
            let names = entries.map(\.name).joined(separator: ", ")
            throw AuthError(.unsupportedProvider, "provider must be one of \(names)")
        }
        return entry
    }

    /// The identity provider a request names, for an unlink (which proves nothing): only
    /// providers whose identities a user can hold.
    func identityProvider(named name: String) throws(AuthError) -> ProviderName {
        // A user holds several passkeys: one is deleted by its id (`passkey` delete), not by name.
        if name == ProviderName.passkey.rawValue {
            throw AuthError(.invalidRequest, "a passkey is deleted by the passkey handler's delete action, with its passkeyId")
        }
        guard let provider = ProviderName(rawValue: name), entries.contains(where: { $0.name == name }) else {
            let names = entries.map(\.name).filter { ProviderName(rawValue: $0) != nil }.joined(separator: ", ")
            throw AuthError(.unsupportedProvider, "provider must be one of \(names)")
        }
        return provider
    }
}
