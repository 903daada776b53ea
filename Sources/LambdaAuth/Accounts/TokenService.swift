import Logging
import Synchronization

/// What the flows need from our own tokens: issuing an access token, a refresh token's response
/// form and credentials for a session, and checking an access token.
protocol TokenIssuing: Sendable {
    /// `anonymous`: the user is a guest (`is_anonymous` in the access token); `appMetadata`: the
    /// user's, as the claim `app_metadata` (contract section 17); `assurance`: the session's
    /// `aal` and `amr` (contract section 21); `claimsHook`: the app's `accessTokenClaims` hook for
    /// this token (contract section 19), asked here unless the flow asked it before its write.
    func issueTokens(userID: String, sessionID: String, refresh: RefreshTokenCredential, anonymous: Bool,
                     appMetadata: [String: JSONValue], assurance: Assurance, claimsHook: AccessTokenClaimsCall,
                     logger: Logger) throws(AuthError) -> IssuedTokens
    /// The one place an access token is minted: `issueTokens`, and a step-up's new access token
    /// for a session whose refresh token stays the client's.
    func issueAccessToken(userID: String, sessionID: String, anonymous: Bool, appMetadata: [String: JSONValue],
                          assurance: Assurance, claimsHook: AccessTokenClaimsCall,
                          logger: Logger) throws(AuthError) -> (accessToken: String, lifetime: Int64)
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

/// What our tokens are: `iss` and `aud` (AUTH_ISSUER, AUTH_ACCESS_TOKEN_AUDIENCE), the lifetimes,
/// the signing keys and the credentials' secret (nil: the dev ones kept in the local store), and
/// `sts` with AUTH_CREDENTIALS=sts (nil: local credentials).
struct TokenSettings: Sendable {
    var issuer, audience: String
    var accessTokenTTL, refreshTokenTTL: Int64
    var signingKeys: AccessTokenKeySet?
    var credentialsSecret: String?
    var credentialsTTL: Int64
    var sts: STSCredentialIssuer.Settings?
}

/// The access-token key and the credential issuer, created once per process (the development
/// ones from the local store on first use) and kept warm between invocations.
final class TokenService: TokenIssuing, Sendable {
    let settings: TokenSettings
    let table: any Table
    let clock: any WallClock
    let random: any RandomSource
    private struct Cache {
        var accessTokenIssuer: AccessTokenIssuer?
        var credentialIssuer: (any CredentialIssuer)?
    }
    private let cache = Synchronization.Mutex(Cache())

    init(settings: TokenSettings, table: any Table, clock: any WallClock, random: any RandomSource) {
        self.settings = settings
        self.table = table
        self.clock = clock
        self.random = random
        if let keys = settings.signingKeys {
            let issuer = accessTokenIssuer(keys)
            cache.withLock { $0.accessTokenIssuer = issuer }
        }
    }

    private func accessTokenIssuer(_ keys: AccessTokenKeySet) -> AccessTokenIssuer {
        AccessTokenIssuer(keys: keys, issuer: settings.issuer, audience: settings.audience, lifetime: settings.accessTokenTTL)
    }

    /// Mints the access token and credentials for a session whose new refresh token is `refresh`.
    /// Sign-in does it before its write, so a failure (no key, STS down) leaves the store as it
    /// was; refresh after its rotation commits, so that lost races never cost an STS call each.
    func issueTokens(userID: String, sessionID: String, refresh: RefreshTokenCredential, anonymous: Bool,
                     appMetadata: [String: JSONValue], assurance: Assurance, claimsHook: AccessTokenClaimsCall,
                     logger: Logger) throws(AuthError) -> IssuedTokens {
        let (accessToken, _) = try issueAccessToken(userID: userID, sessionID: sessionID, anonymous: anonymous, appMetadata: appMetadata,
                                                    assurance: assurance, claimsHook: claimsHook, logger: logger)
        let credentials = try credentialIssuer(logger: logger).issue(userID: userID, now: clock.nowSeconds)
        return IssuedTokens(accessToken: accessToken, accessTokenLifetime: settings.accessTokenTTL, refreshToken: refresh.token,
                            refreshTokenLifetime: settings.refreshTokenTTL, credentials: credentials)
    }

    func issueAccessToken(userID: String, sessionID: String, anonymous: Bool, appMetadata: [String: JSONValue],
                          assurance: Assurance, claimsHook: AccessTokenClaimsCall,
                          logger: Logger) throws(AuthError) -> (accessToken: String, lifetime: Int64) {
        // The hook first: refused, it leaves even a new store's dev key uncreated.
        var hook = claimsHook
        let hookClaims = try hook.claims(logger: logger)
        guard let issuer = try accessTokenIssuer(create: true, logger: logger) else {
            throw .internalError("no access-token signing key")
        }
        let accessToken = try issuer.issue(userID: userID, sessionID: sessionID, now: clock.nowSeconds, random: random, anonymous: anonymous,
                                           appMetadata: appMetadata, assurance: assurance.claims, hookClaims: hookClaims)
        return (accessToken, settings.accessTokenTTL)
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
        let issuer = accessTokenIssuer(keys)
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
        if let sts = settings.sts {
            // Built on first use: a missing region fails the first issue, not the start.
            issuer = try STSCredentialIssuer(settings: sts)
        } else {
            var secret = settings.credentialsSecret
            if secret == nil {
                secret = try DevSecrets.credentialsSecret(in: table, create: true, now: clock.nowSeconds, random: random, logger: logger)
            }
            issuer = LocalCredentialMinter(masterSecret: secret!, lifetime: settings.credentialsTTL, random: random)
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
