import Logging

/// Who an ID token says the caller is, once every check has passed.
public struct VerifiedIdentity: Sendable {
    public let provider: ProviderName
    public let subject: String
    public let email: String?
    public let emailVerified: Bool
    /// Apple's relay addresses (`…@privaterelay.appleid.com`).
    public let isPrivateEmail: Bool
    public let name: String?
    public let picture: String?
    /// The whole payload, for the flows that need more than the fields above.
    public let claims: [String: JSONValue]

    public init(provider: ProviderName, subject: String, email: String?, emailVerified: Bool, isPrivateEmail: Bool,
                name: String?, picture: String?, claims: [String: JSONValue]) {
        self.provider = provider
        self.subject = subject
        self.email = email
        self.emailVerified = emailVerified
        self.isPrivateEmail = isPrivateEmail
        self.name = name
        self.picture = picture
        self.claims = claims
    }

    /// The longest `sub` or `email` accepted (contract section 13).
    public static let maximumKeyPartBytes = 1024

    /// Reads the identity fields of a verified payload. `sub` is the one field an identity cannot do without.
    public init(provider: ProviderName, claims: [String: JSONValue]) throws(AuthError) {
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty else {
            throw AuthError(.malformedToken, "the ID token has no sub")
        }
        // Both become parts of table keys; DynamoDB refuses a partition key over 2,048 bytes,
        // so one limit well inside it answers alike on every backend.
        let email = claims["email"]?.stringValue
        guard subject.utf8.count <= VerifiedIdentity.maximumKeyPartBytes,
              (email?.utf8.count ?? 0) <= VerifiedIdentity.maximumKeyPartBytes else {
            throw AuthError(.malformedToken, "the ID token's sub or email is longer than \(VerifiedIdentity.maximumKeyPartBytes) bytes")
        }
        self.init(provider: provider, subject: subject, email: email,
                  emailVerified: IDTokenClaims.flag(claims["email_verified"]),
                  isPrivateEmail: IDTokenClaims.flag(claims["is_private_email"]),
                  name: claims["name"]?.stringValue, picture: claims["picture"]?.stringValue, claims: claims)
    }

    /// The identity as JSON (the fields above, without the raw claims).
    public var json: JSONValue {
        [
            "provider": .string(provider.rawValue),
            "subject": .string(subject),
            "email": email.map(JSONValue.string) ?? .null,
            "emailVerified": .bool(emailVerified),
            "isPrivateEmail": .bool(isPrivateEmail),
            "name": name.map(JSONValue.string) ?? .null,
            "picture": picture.map(JSONValue.string) ?? .null,
        ]
    }
}

/// Verifies Google and Apple ID tokens (contract sections 2 and 5). One instance per process:
/// it holds each provider's parsed keys, so a warm verification costs one RSA verify plus
/// parsing, with no I/O.
///
/// Check order, cheapest and least trusting first; nothing the token claims is looked at before
/// its signature has verified:
/// 1. size (over 16 KiB: INVALID_REQUEST, unparsed);
/// 2. the provider has audiences configured (PROVIDER_NOT_CONFIGURED);
/// 3. structure: three canonical base64url parts, JSON objects, no duplicate names (MALFORMED_TOKEN);
/// 4. header: no `crit`, `alg` RS256 (UNSUPPORTED_ALGORITHM); a `kid` (UNKNOWN_KEY_ID).
///    `jku`, `x5u`, `jwk`, `x5c` are never read: keys come from the configured JWKS only;
/// 5. the key for `kid` from the cache, fetching as its policy allows (UNKNOWN_KEY_ID, JWKS_UNAVAILABLE);
/// 6. the signature (INVALID_SIGNATURE);
/// 7. claims: `iss` (INVALID_ISSUER), `aud` (INVALID_AUDIENCE), `exp` (TOKEN_EXPIRED),
///    `iat`/`nbf` (TOKEN_NOT_YET_VALID), `nonce` (NONCE_REQUIRED, NONCE_MISMATCH), `sub` (MALFORMED_TOKEN).
public final class IDTokenVerifier: Sendable {
    struct ProviderState: Sendable {
        let issuers: [String]
        let audiences: [String]
        let keys: Result<ProviderKeyCache, AuthError>
    }

    /// A list, not a dictionary keyed by ProviderName: see TransactionPlan for what a dictionary
    /// keyed by a type of our own costs each process.
    let providers: [(name: ProviderName, state: ProviderState)]
    let clockSkew: Int64
    let requireNonce: Bool
    let clock: any WallClock

    public init(configuration: AuthConfiguration, httpClient: any HTTPClient, clock: any WallClock, logger: Logger) {
        var providers: [(name: ProviderName, state: ProviderState)] = []
        for name in ProviderName.idTokenProviders {
            let settings = configuration.provider(name)
            let variable = "AUTH_\(name.rawValue.uppercased())_JWKS_URL"
            let keys: Result<ProviderKeyCache, AuthError>
            do {
                let source = try JWKSLocation(settings.jwksURL, variable: variable).source(client: httpClient)
                keys = .success(ProviderKeyCache(provider: KeySetName(name.rawValue), source: source, cacheDirectory: configuration.cacheDirectory,
                                                 clock: clock, logger: logger))
            } catch {
                keys = .failure(error)
            }
            providers.append((name, ProviderState(issuers: name.issuers, audiences: settings.audiences, keys: keys)))
        }
        self.providers = providers
        clockSkew = configuration.clockSkew
        requireNonce = configuration.requireNonce
        self.clock = clock
    }

    public func verify(_ token: String, provider: ProviderName, nonce: String?) throws(AuthError) -> VerifiedIdentity {
        let claims = try verifiedClaims(token, provider: provider)
        try IDTokenClaims.checkNonce(claims, requestNonce: nonce, requireNonce: requireNonce)
        return try VerifiedIdentity(provider: provider, claims: claims)
    }

    /// Every check of `verify` but the nonce and `sub`: what a token of the provider that is not
    /// a sign-in needs (Apple's server-to-server notifications carry neither).
    public func verifiedClaims(_ token: String, provider: ProviderName) throws(AuthError) -> [String: JSONValue] {
        guard token.utf8.count <= CompactJWS.maximumBytes else {
            throw AuthError(.invalidRequest, "the ID token is longer than 16 KiB")
        }
        guard ProviderName.idTokenProviders.contains(provider) else {
            throw AuthError(.unsupportedProvider, "\(provider.rawValue) identities are proven with a code, not an ID token")
        }
        guard let state = providers.first(where: { $0.name == provider })?.state, !state.audiences.isEmpty else {
            throw AuthError(.providerNotConfigured,
                            "\(provider.rawValue) sign-in is not configured (AUTH_\(provider.rawValue.uppercased())_AUDIENCES is empty)")
        }
        let parsed = try JSONWebToken(parsing: token)
        _ = try parsed.jws.checkAlgorithm(allowed: [.rs256])
        guard let keyID = parsed.jws.keyID, !keyID.isEmpty else {
            throw AuthError(.unknownKeyID, "the token has no kid")
        }
        try parsed.jws.verifySignature(with: state.keys.get().key(id: keyID))
        let claims = parsed.claims
        try IDTokenClaims.checkIssuer(claims, issuers: state.issuers)
        try IDTokenClaims.checkAudience(claims, audiences: state.audiences)
        try IDTokenClaims.checkTimes(claims, now: clock.now(), skew: clockSkew)
        return claims
    }
}
