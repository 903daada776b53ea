import Logging
import Synchronization

/// What the flows need from our own tokens: issuing an access token, a refresh token's response
/// form and credentials for a session, and checking an access token.
protocol TokenIssuing: Sendable {
    /// `anonymous`: the user is a guest (`is_anonymous` in the access token); `appMetadata`: the
    /// user's, as the claim `app_metadata` (contract section 17).
    func issueTokens(userID: String, sessionID: String, refresh: RefreshTokenCredential, anonymous: Bool,
                     appMetadata: [String: JSONValue], logger: Logger) throws(AuthError) -> IssuedTokens
    func verifyAccessToken(_ token: String, logger: Logger) throws(AuthError) -> AccessTokenClaims
}

/// What every successful sign-in and refresh returns besides the user: a new access token, a new
/// refresh token (stored by the flow's transaction) and temporary credentials.
struct IssuedTokens: Sendable {
    let accessToken: String
    let accessTokenLifetime: Int64
    let refreshToken: String
    /// What the refresh token's record allows (the flows cap it by the session's maximum age and a
    /// guest's expiry once they know them).
    var refreshTokenLifetime: Int64
    let credentials: TemporaryCredentials
}

/// The access-token key and the credential issuer, created once per process (the development
/// ones from the local store on first use) and kept warm between invocations.
final class TokenService: TokenIssuing, Sendable {
    let configuration: AuthConfiguration
    let table: any Table
    let clock: any WallClock
    let random: any RandomSource
    private struct Cache {
        var accessTokenIssuer: AccessTokenIssuer?
        var credentialIssuer: (any CredentialIssuer)?
    }
    private let cache = Synchronization.Mutex(Cache())

    init(configuration: AuthConfiguration, table: any Table, clock: any WallClock, random: any RandomSource) throws(AuthError) {
        self.configuration = configuration
        self.table = table
        self.clock = clock
        self.random = random
        if let keys = configuration.signingKeys {
            let issuer = AccessTokenIssuer(keys: keys, issuer: configuration.issuer, audience: configuration.accessTokenAudience,
                                           lifetime: configuration.accessTokenTTL)
            cache.withLock { $0.accessTokenIssuer = issuer }
        }
    }

    /// Mints the access token and credentials for a session whose new refresh token is `refresh`.
    /// Sign-in does it before its write, so a failure (no key, STS down) leaves the store as it
    /// was; refresh after its rotation commits, so that lost races never cost an STS call each.
    func issueTokens(userID: String, sessionID: String, refresh: RefreshTokenCredential, anonymous: Bool,
                     appMetadata: [String: JSONValue], logger: Logger) throws(AuthError) -> IssuedTokens {
        guard let issuer = try accessTokenIssuer(create: true, logger: logger) else {
            throw .internalError("no access-token signing key")
        }
        let now = clock.nowSeconds
        let accessToken = try issuer.issue(userID: userID, sessionID: sessionID, now: now, random: random, anonymous: anonymous,
                                           appMetadata: appMetadata)
        let credentials = try credentialIssuer(logger: logger).issue(userID: userID, now: now)
        return IssuedTokens(accessToken: accessToken, accessTokenLifetime: configuration.accessTokenTTL, refreshToken: refresh.token,
                            refreshTokenLifetime: configuration.refreshTokenTTL, credentials: credentials)
    }

    func verifyAccessToken(_ token: String, logger: Logger) throws(AuthError) -> AccessTokenClaims {
        guard let issuer = try accessTokenIssuer(create: false, logger: logger) else {
            throw AuthError(.accessTokenInvalid, "the access token was not signed by one of this service's keys")
        }
        return try issuer.verify(token, now: clock.nowSeconds)
    }

    /// The access-token issuer; with no configured key, the dev key inside the local store, which
    /// is created only when `create` (issuing paths), never by a verification.
    func accessTokenIssuer(create: Bool, logger: Logger) throws(AuthError) -> AccessTokenIssuer? {
        if let cached = cache.withLock({ $0.accessTokenIssuer }) { return cached }
        guard let keys = try DevSecrets.signingKeys(in: table, create: create, now: clock.nowSeconds, logger: logger) else {
            return nil
        }
        let issuer = AccessTokenIssuer(keys: keys, issuer: configuration.issuer,
                                       audience: configuration.accessTokenAudience, lifetime: configuration.accessTokenTTL)
        // Only an old store's ES256 key and no RS256 one yet (a check before anything was issued):
        // not kept, so that this process's first issue creates the RS256 key and signs with it.
        if keys.signing.algorithm == .rs256 {
            cache.withLock { $0.accessTokenIssuer = issuer }
        }
        return issuer
    }

    func credentialIssuer(logger: Logger) throws(AuthError) -> any CredentialIssuer {
        if let cached = cache.withLock({ $0.credentialIssuer }) { return cached }
        let issuer: any CredentialIssuer
        switch configuration.credentialsMode {
        case .local:
            var secret = configuration.credentialsSecret
            if secret == nil {
                secret = try DevSecrets.credentialsSecret(in: table, create: true, now: clock.nowSeconds, random: random, logger: logger)
            }
            issuer = LocalCredentialMinter(masterSecret: secret!, lifetime: configuration.credentialsTTL, random: random)
        case .sts:
            issuer = try STSCredentialIssuer(configuration: configuration)
        }
        cache.withLock { $0.credentialIssuer = issuer }
        return issuer
    }
}

extension IDTokenVerifier: IdentityVerifying {}

/// What the flows need from ID token verification.
protocol IdentityVerifying: Sendable {
    func verify(_ token: String, provider: ProviderName, nonce: String?) throws(AuthError) -> VerifiedIdentity
}
