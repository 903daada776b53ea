import Logging

/// Verifies our access tokens in another service, from the issuer's published JWKS
/// (`<issuer>/.well-known/jwks.json`, served by `well-known`). One instance per process: it keeps
/// the parsed keys, so a warm verification is one signature check (RS256 or ES256) and no I/O.
///
/// The keys are cached exactly as the ID-token providers' are (`ProviderKeyCache`): fresh for the
/// response's `max-age` (clamped to 60 s – 24 h), mirrored in `cacheDirectory` when given, one
/// refetch for an unknown `kid` at most every 30 s, and cached keys served through an outage.
/// The checks are the handlers' own (`AccessTokenCheck`): RS256 or ES256 only, each with a key of
/// its own kind (`none`, HS256 or `crit` are refused), `kid`, signature, `iss`, `aud`, `exp`, `nbf`
/// and `iat` with `clockSkew`. Every failure about the token
/// is ACCESS_TOKEN_INVALID; JWKS_UNAVAILABLE when no keys can be fetched and none are cached.
///
/// With `revocations` (contract section 20), a valid token whose `sid` or `sub` the issuer's
/// revocation list names is ACCESS_TOKEN_REVOKED: a sign-out reaches this service within the
/// feed's maximum age (5 s by default) instead of at the token's `exp`, with no call to the issuer
/// per token (`RevocationFeed` says when it fetches). When the list cannot be had for 60 s, every
/// token is refused with JWKS_UNAVAILABLE (503, retryable).
public final class AccessTokenVerifier: Sendable {
    public let jwksURL: String
    let check: AccessTokenCheck
    let keys: ProviderKeyCache
    let clock: any WallClock
    let revocations: RevocationFeed?

    /// `audiences`: accepted when a token's `aud` names any of them; by default the issuer (the
    /// default of `AUTH_ACCESS_TOKEN_AUDIENCE`). `jwksURL`: `https://`, `file://` or loopback
    /// `http://`. Throws CONFIG_ERROR for an unusable URL or an empty audience list.
    public init(jwksURL: String, issuer: String, audiences: [String]? = nil, clockSkew: Int64 = 60, cacheDirectory: String? = nil,
                revocations: RevocationFeedSettings? = nil,
                httpClient: any HTTPClient = CurlHTTPClient(), clock: any WallClock = SystemClock(),
                logger: Logger = Logger(label: "lambda-auth-verifier")) throws(AuthError) {
        let audiences = audiences ?? [issuer]
        guard !audiences.isEmpty else { throw AuthError(.configError, "an access-token verifier needs at least one audience") }
        guard clockSkew >= 0 else { throw AuthError(.configError, "the clock skew must not be negative") }
        let source = try JWKSLocation(jwksURL, variable: "jwksURL").source(client: httpClient)
        self.jwksURL = jwksURL
        check = AccessTokenCheck(issuer: issuer, audiences: audiences, clockSkew: clockSkew)
        keys = ProviderKeyCache(provider: KeySetName("access-token"), algorithms: AccessTokenCheck.algorithms, source: source,
                                cacheDirectory: cacheDirectory, clock: clock, logger: logger)
        self.clock = clock
        self.revocations = try revocations.map { (settings) throws(AuthError) in
            try RevocationFeed(settings: settings, issuer: issuer, httpClient: httpClient, clock: clock, logger: logger)
        }
    }

    /// The keys from `<issuer>/.well-known/jwks.json`, where `well-known` publishes them.
    public convenience init(issuer: String, audiences: [String]? = nil, clockSkew: Int64 = 60, cacheDirectory: String? = nil,
                            revocations: RevocationFeedSettings? = nil,
                            httpClient: any HTTPClient = CurlHTTPClient(), clock: any WallClock = SystemClock(),
                            logger: Logger = Logger(label: "lambda-auth-verifier")) throws(AuthError) {
        try self.init(jwksURL: AccessTokenVerifier.jwksURL(issuer: issuer), issuer: issuer, audiences: audiences,
                      clockSkew: clockSkew, cacheDirectory: cacheDirectory, revocations: revocations, httpClient: httpClient,
                      clock: clock, logger: logger)
    }

    /// `<issuer>/.well-known/jwks.json`, as the issuer's discovery document names it.
    public static func jwksURL(issuer: String) -> String {
        (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/jwks.json"
    }

    public func verify(_ token: String) throws(AuthError) -> AccessTokenClaims {
        let claims = try check.verify(token, now: clock.nowSeconds, key: issuerKey)
        // After the token's own checks: a forged or expired token costs no list fetch.
        if let revocations, try revocations.current(key: issuerKey).revokes(claims) {
            throw RevocationList.revoked(claims)
        }
        return claims
    }

    /// Revocation-list fetches this verifier attempted (its feed's; 0 without one).
    public var revocationFetches: Int { revocations?.fetches ?? 0 }

    private func issuerKey(_ keyID: String) throws(AuthError) -> JSONWebKey? {
        do throws(AuthError) {
            return try keys.key(id: keyID)
        } catch {
            // Still unknown after the refetch the cache policy allows: not one of the issuer's keys.
            guard error.code == .unknownKeyID else { throw error }
            return nil
        }
    }
}
