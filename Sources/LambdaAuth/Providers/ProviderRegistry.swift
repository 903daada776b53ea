import Logging

/// What a request proves (contract sections 3, 8, 9, 10, 14, 15): who it is, and what a sign-in
/// needs beside the identity. Providers only prove: `SignInFlow` signs in with the proof,
/// `LinkProviderFlow` links it, the account deletion re-authenticates with it.
struct ProvenIdentity: Sendable {
    var identity: VerifiedIdentity
    /// The proof's strength. An ID token can be weeks old for a sign-in but must be fresh to
    /// re-authenticate; an email code or a passkey is checked when it is used: fresh as it is.
    var isOneTimeProof: Bool
    /// Apple only: exchanged at Apple before any write; its refresh token is kept (contract section 8).
    var authorizationCode: String? = nil
    /// Apple sends the name once, from the app, beside the ID token.
    var profileName: String? = nil
    /// A sign-in's writes of the proof itself (a passkey's), committed with the session.
    var ceremony: ProofCeremony? = nil
    /// A passkey whose authenticator verified the user (UV): two factors already (contract section 21).
    var userVerified = false
    /// The sign-in's second factor was checked (`mfa` `challenge`): the session opens at aal2.
    var passedSecondFactor = false
    /// A one-time proof not spent yet (an email code): the sign-in spends it after the app's
    /// hooks and before its own write; nil when proving spent it already, or spends nothing.
    var use: (@Sendable () throws(AuthError) -> Void)? = nil
}

/// What a proof writes when it is used (a passkey's challenge consumed, its count moved), in the
/// transaction that opens the session, so a refused ceremony opens nothing. The credential
/// belongs to one user: the sign-in opens a session of that user or of no one.
struct ProofCeremony: Sendable {
    let userID: String
    let writes: [TransactWriteAction]
    /// Why the writes were refused, from their cancellation reasons in their order.
    let refusal: @Sendable ([CancellationReason]) -> AuthError
    /// The answer when the credential's user is gone (deleted, or being deleted).
    let userGone: AuthError
}

/// Why a proof is read: a sign-in takes more than the identity (Apple's code and name, a ceremony
/// riding with the session); a link or a re-authentication the identity alone (a ceremony commits first).
enum ProofPurpose { case signIn, identity }

/// One way of proving who a request is, as a value: a request's proof in, a proven identity out.
/// Sign-in, link and re-authentication ask the registry for the entry a request names and never
/// switch on provider names themselves, so a new kind of proof is one type and one line of
/// `AuthServices.providers` (docs/providers.md).
protocol SignInProvider: Sendable {
    var name: String { get }
    /// What `body` proves; nil: this provider proves no one (a guest, whom a sign-in creates).
    func prove(_ body: RequestBody, for purpose: ProofPurpose, logger: Logger) throws(AuthError) -> ProvenIdentity?
}

/// An ID token of a provider: Google, Apple (with its authorization code and one-time name) or a
/// provider of AUTH_OIDC_PROVIDERS; all verified by the same `IDTokenVerifier`, once.
struct IDTokenSignIn: SignInProvider {
    let provider: ProviderName
    let verifier: any IdentityVerifying

    var name: String { provider.rawValue }

    func prove(_ body: RequestBody, for purpose: ProofPurpose, logger: Logger) throws(AuthError) -> ProvenIdentity? {
        let idToken = try body.requiredString("idToken", maximumBytes: 16 << 10)
        let nonce = try body.optionalString("nonce", maximumBytes: 1024, emptyIsAbsent: true)
        var profileName: String?, authorizationCode: String?
        if purpose == .signIn {
            // The whole sign-in is read before the token is verified: a malformed one costs no
            // key fetch. The device itself is the sign-in's, read again by SignInFlow.
            _ = try SignInRequest.device(body)
            profileName = try body.optionalObject("profile")?.optionalString("name", maximumBytes: 256, emptyIsAbsent: true)
            // An empty code is refused, not ignored: a sign-in without Apple's grant leaves nothing
            // for the account's deletion to revoke at Apple.
            authorizationCode = try body.optionalString("authorizationCode", maximumBytes: 4096)
            if authorizationCode != nil, provider != .apple {
                throw AuthError(.invalidRequest, "authorizationCode is accepted with provider apple only")
            }
        }
        return ProvenIdentity(identity: try verifier.verify(idToken, provider: provider, nonce: nonce), isOneTimeProof: false,
                              authorizationCode: authorizationCode, profileName: profileName)
    }
}

/// An address proven by a one-time code (contract section 10).
struct EmailCodeSignIn: SignInProvider {
    let oneTimeCodes: Result<OneTimeCodeFlow, AuthError>

    var name: String { ProviderName.email.rawValue }

    func prove(_ body: RequestBody, for purpose: ProofPurpose, logger: Logger) throws(AuthError) -> ProvenIdentity? {
        let codes = try oneTimeCodes.get()
        try codes.requireEnabled()
        let email = try EmailAddress(try body.requiredString("email", maximumBytes: 254))
        let checked = try codes.check(email, code: try body.requiredString("code", maximumBytes: 16), logger: logger)
        guard purpose == .signIn else {
            try checked.use()
            return ProvenIdentity(identity: checked.identity, isOneTimeProof: true)
        }
        // A sign-in spends the code once the app's hooks let it go on (`SignInFlow`).
        return ProvenIdentity(identity: checked.identity, isOneTimeProof: true, use: checked.use)
    }
}

/// A new anonymous user (contract section 9): proves no identity to sign in, link or
/// re-authenticate with; a sign-in with it creates a guest.
struct GuestSignIn: SignInProvider {
    /// The name a guest sign-in sends; no identity provider's (a guest holds no identity).
    var name: String { "guest" }

    func prove(_ body: RequestBody, for purpose: ProofPurpose, logger: Logger) throws(AuthError) -> ProvenIdentity? {
        // A client that sends a token believes it signs someone in: never a silent guest.
        if purpose == .signIn, body.fields["idToken"] != nil || body.fields["authorizationCode"] != nil {
            throw AuthError(.invalidRequest, "provider guest takes no idToken or authorizationCode")
        }
        return nil
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
