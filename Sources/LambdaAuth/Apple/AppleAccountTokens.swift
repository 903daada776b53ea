import Logging

/// What the account flows do with Apple's back channel: exchange a sign-in's authorization code
/// and keep Apple's refresh token sealed in the user's partition; revoke it at Apple before the
/// account or the Apple identity goes. `client` is nil when AUTH_APPLE_TEAM_ID & co. are unset.
struct AppleAccountTokens: Sendable {
    let client: AppleTokenClient?
    let sealing: ProviderTokenSealing?
    let store: AccountStore
    let clock: any WallClock

    init(settings: AppleServerSettings?, http: any HTTPClient, store: AccountStore, clock: any WallClock) {
        client = settings.map { AppleTokenClient(settings: $0, secrets: AppleClientSecrets(settings: $0, clock: clock), http: http) }
        sealing = settings.map { ProviderTokenSealing(keys: $0.dataKeys) }
        self.store = store
        self.clock = clock
    }

    struct ExchangedGrant: Sendable {
        var clientID: String
        var refreshToken: String?
    }

    /// Exchanges `code` with the client id the verified Apple ID token was issued to, and checks
    /// that Apple's answer is about the same Apple account.
    func exchange(_ code: String, for identity: VerifiedIdentity) throws(AuthError) -> ExchangedGrant {
        guard let client else {
            throw AuthError(.providerNotConfigured,
                            "Apple's authorization code exchange is not configured (AUTH_APPLE_TEAM_ID, AUTH_APPLE_KEY_ID, AUTH_APPLE_PRIVATE_KEY)")
        }
        guard let clientID = AppleAccountTokens.audience(of: identity) else {
            throw AuthError(.invalidAudience, "the ID token names no audience")
        }
        let grant = try client.exchange(code: code, clientID: clientID)
        guard let parsed = try? JSONWebToken(parsing: grant.idToken), let subject = parsed.claims["sub"]?.stringValue else {
            throw AuthError(.providerUnavailable, "Apple's token endpoint answered with an unreadable ID token")
        }
        guard subject.sameBytes(as: identity.subject) else {
            throw AuthError(.authorizationCodeInvalid, "the authorization code belongs to another Apple account than the ID token")
        }
        return ExchangedGrant(clientID: clientID, refreshToken: grant.refreshToken)
    }

    /// Seals and stores Apple's refresh token for the signed-in user (replacing an earlier one).
    func keep(_ grant: ExchangedGrant, userID: String, subject: String, logger: Logger) throws(AuthError) {
        guard let refreshToken = grant.refreshToken, let sealing else { return }
        let sealed = try sealing.seal(refreshToken, userID: userID, provider: .apple, subject: subject)
        let record = ProviderTokenRecord(userID: userID, provider: .apple, subject: subject, clientID: grant.clientID,
                                         sealedToken: sealed, createdAt: clock.nowSeconds)
        if try store.keep(record) {
            logger.info("kept Apple's refresh token", metadata: ["userId": .string(userID)])
        } else {
            logger.warning("the account went before Apple's refresh token could be kept", metadata: ["userId": .string(userID)])
        }
    }

    /// Revokes the user's stored Apple refresh token at Apple; none stored: nothing to do. Runs
    /// before anything of the account or identity is deleted, so a failure (PROVIDER_UNAVAILABLE)
    /// leaves everything as it was and the token is never lost unrevoked. The item itself goes
    /// with the account or the unlink. With the back channel off there is nothing to revoke with
    /// and nothing is read (the flows keep their request budgets); a token kept while it was on
    /// goes with its item, unrevoked: turning the back channel off is the operator's choice.
    func revokeStored(userID: String, logger: Logger) throws(AuthError) {
        guard let client, let sealing else { return }
        guard let record = try store.providerToken(userID: userID, provider: .apple) else { return }
        guard let token = sealing.open(record)?.plaintext else { throw ProviderTokenSealing.unopenable(userID: userID) }
        try client.revoke(refreshToken: token, clientID: record.clientID)
        logger.info("revoked Apple's refresh token", metadata: ["userId": .string(userID)])
    }

    static func audience(of identity: VerifiedIdentity) -> String? {
        switch identity.claims["aud"] {
        case .string(let audience)?: return audience
        case .array(let audiences)?: return audiences.first?.stringValue
        default: return nil
        }
    }
}
