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
        try self.init(provider: provider, claims: claims, emailVerified: .claim)
    }

    /// As above, with a configured provider's policy on `email_verified`: `always` trusts any
    /// address the token carries, `never` none. `tenant`: the token's `tid` when its provider's
    /// issuer is a `{tenantid}` one; the subject is then `<tenant>:<sub>` (see `IssuerRule.tenant`).
    init(provider: ProviderName, claims: [String: JSONValue], emailVerified policy: OIDCProviderSettings.EmailVerifiedPolicy,
         tenant: String? = nil) throws(AuthError) {
        guard let sub = claims["sub"]?.stringValue, !sub.isEmpty else {
            throw AuthError(.malformedToken, "the ID token has no sub")
        }
        let subject = tenant.map { "\($0):\(sub)" } ?? sub
        // Both become parts of table keys; DynamoDB refuses a partition key over 2,048 bytes,
        // so one limit well inside it answers alike on every backend.
        let email = claims["email"]?.stringValue
        guard subject.utf8.count <= VerifiedIdentity.maximumKeyPartBytes,
              (email?.utf8.count ?? 0) <= VerifiedIdentity.maximumKeyPartBytes else {
            let what = tenant == nil ? "sub" : "tid:sub"
            throw AuthError(.malformedToken, "the ID token's \(what) or email is longer than \(VerifiedIdentity.maximumKeyPartBytes) bytes")
        }
        let verified: Bool
        switch policy {
        case .claim: verified = IDTokenClaims.flag(claims["email_verified"])
        case .always: verified = !(email ?? "").isEmpty
        case .never: verified = false
        }
        self.init(provider: provider, subject: subject, email: email, emailVerified: verified,
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

/// Verifies the ID tokens of OpenID Connect providers: Google's and Apple's presets and those configured in
/// AUTH_OIDC_PROVIDERS (contract sections 2, 5 and 14). One instance per process: it holds each
/// provider's parsed keys, so a warm verification costs one signature check plus parsing, with
/// no I/O.
///
/// Check order, cheapest and least trusting first; nothing the token claims is looked at before
/// its signature has verified:
/// 1. size (over 16 KiB: INVALID_REQUEST, unparsed);
/// 2. the provider has audiences configured (PROVIDER_NOT_CONFIGURED);
/// 3. structure: three canonical base64url parts, JSON objects, no duplicate names (MALFORMED_TOKEN);
/// 4. header: no `crit`, `alg` among the provider's (RS256 for Google and Apple)
///    (UNSUPPORTED_ALGORITHM); a `kid` (UNKNOWN_KEY_ID).
///    `jku`, `x5u`, `jwk`, `x5c` are never read: keys come from the configured JWKS only;
/// 5. the key for `kid` from the cache, fetching as its policy allows (UNKNOWN_KEY_ID, JWKS_UNAVAILABLE);
/// 6. the signature, with an algorithm the key allows (INVALID_SIGNATURE);
/// 7. claims: `iss` (INVALID_ISSUER; a `{tenantid}` issuer with the token's `tid`, among the
///    allowed tenants), `aud` and, when it names several, `azp` (INVALID_AUDIENCE), `exp` (TOKEN_EXPIRED), `iat`/`nbf`
///    (TOKEN_NOT_YET_VALID), `nonce` (NONCE_REQUIRED, NONCE_MISMATCH), `sub` (MALFORMED_TOKEN).
public final class IDTokenVerifier: Sendable {
    struct ProviderState: Sendable {
        let settings: OIDCProviderSettings
        let issuers: IssuerRule
        let keys: Result<ProviderKeyCache, AuthError>
    }

    /// A list, not a dictionary keyed by ProviderName: see TransactionPlan for what a dictionary
    /// keyed by a type of our own costs each process.
    let providers: [(name: ProviderName, state: ProviderState)]
    let clockSkew: Int64
    let clock: any WallClock

    /// The providers configured in AUTH_OIDC_PROVIDERS, in their order: those besides the presets.
    public var configuredProviders: [ProviderName] { providers.map(\.name).filter { !$0.isBuiltIn } }

    /// `providers`: Google's and Apple's presets and the configured ones (`AuthConfiguration.identityProviders`);
    /// `cacheDirectory`: where fetched key sets are kept between processes.
    public init(providers settings: [OIDCProviderSettings], clockSkew: Int64, cacheDirectory: String, httpClient: any HTTPClient,
                clock: any WallClock, logger: Logger) {
        providers = settings.map { settings in
            let keySet = KeySetName(settings.name.rawValue)
            let keys = Result { () throws(AuthError) -> ProviderKeyCache in
                let source: any JWKSSource
                if let jwksURI = settings.jwksURI {
                    source = try JWKSLocation(jwksURI, variable: settings.jwksVariable).source(client: httpClient)
                } else {
                    source = DiscoveryJWKSSource(issuer: settings.issuer, discoveryURL: settings.discoveryURL, provider: keySet,
                                                 client: httpClient, cacheDirectory: cacheDirectory, clock: clock)
                }
                return ProviderKeyCache(provider: keySet, algorithms: settings.algorithms, source: source,
                                        cacheDirectory: cacheDirectory, clock: clock, logger: logger)
            }
            let issuers: IssuerRule = settings.isMultiTenant ? .perTenant(pattern: settings.issuer, tenants: settings.tenants)
                                                             : .exact([settings.issuer] + settings.issuerAliases)
            return (settings.name, ProviderState(settings: settings, issuers: issuers, keys: keys))
        }
        self.clockSkew = clockSkew
        self.clock = clock
    }

    /// Every check, then the identity the token proves: for Google, Apple or a configured provider.
    public func verify(_ token: String, provider: ProviderName, nonce: String?) throws(AuthError) -> VerifiedIdentity {
        let (claims, state) = try verifiedClaimsAndState(token, provider: provider)
        try IDTokenClaims.checkNonce(claims, requestNonce: nonce, requireNonce: state.settings.requireNonce)
        return try VerifiedIdentity(provider: provider, claims: claims, emailVerified: state.settings.emailVerified,
                                    tenant: state.issuers.tenant(of: claims))
    }

    /// Every check of `verify` but the nonce and `sub`: what a token of the provider that is not
    /// a sign-in needs (Apple's server-to-server notifications carry neither).
    public func verifiedClaims(_ token: String, provider: ProviderName) throws(AuthError) -> [String: JSONValue] {
        try verifiedClaimsAndState(token, provider: provider).claims
    }

    func verifiedClaimsAndState(_ token: String, provider: ProviderName) throws(AuthError) -> (claims: [String: JSONValue], state: ProviderState) {
        guard token.utf8.count <= CompactJWS.maximumBytes else {
            throw AuthError(.invalidRequest, "the ID token is longer than 16 KiB")
        }
        guard let state = providers.first(where: { $0.name == provider })?.state else {
            if provider == .email {
                throw AuthError(.unsupportedProvider, "\(provider.rawValue) identities are proven with a code, not an ID token")
            }
            throw AuthError(.unsupportedProvider, "\(provider.rawValue) is not a configured provider")
        }
        guard !state.settings.audiences.isEmpty else {
            throw AuthError(.providerNotConfigured,
                            "\(provider.rawValue) sign-in is not configured (AUTH_\(provider.rawValue.uppercased())_AUDIENCES is empty)")
        }
        let parsed = try JSONWebToken(parsing: token)
        _ = try parsed.jws.checkAlgorithm(allowed: state.settings.algorithms)
        guard let keyID = parsed.jws.keyID, !keyID.isEmpty else {
            throw AuthError(.unknownKeyID, "the token has no kid")
        }
        try parsed.jws.verifySignature(with: state.keys.get().key(id: keyID))
        let claims = parsed.claims
        try state.issuers.check(claims)
        try IDTokenClaims.checkAudience(claims, audiences: state.settings.audiences)
        try IDTokenClaims.checkTimes(claims, now: clock.now(), skew: clockSkew)
        return (claims, state)
    }
}

/// Which `iss` values a provider's tokens may carry.
enum IssuerRule: Sendable {
    /// One of these, exactly (Google's two spellings, Apple's, a configured provider's issuer).
    case exact([String])
    /// Microsoft Entra ID's multi-tenant issuer: `pattern` with `{tenantid}` replaced by the
    /// token's own `tid`, which must be among `tenants` when they are given.
    case perTenant(pattern: String, tenants: [String]?)

    func check(_ claims: [String: JSONValue]) throws(AuthError) {
        switch self {
        case .exact(let issuers):
            try IDTokenClaims.checkIssuer(claims, issuers: issuers)
        case .perTenant(let pattern, let tenants):
            guard let tenant = claims["tid"]?.stringValue, !tenant.isEmpty else {
                throw AuthError(.invalidIssuer, "the token has no tid to match the issuer \(pattern)")
            }
            // The tenant leads the identity's subject up to the first ':' (`tenant(of:)`).
            guard !tenant.utf8.contains(UInt8(ascii: ":")) else {
                throw AuthError(.invalidIssuer, "the token's tid contains ':'")
            }
            try IDTokenClaims.checkIssuer(claims, issuers: [pattern.replacing(text: OIDCProviderSettings.tenantPlaceholder, with: tenant)])
            if let tenants, !tenants.contains(tenant) {
                throw AuthError(.invalidIssuer, "the token's tenant is not among the accepted tenants")
            }
        }
    }

    /// The tenant an identity of this issuer belongs to, once `check` has passed: the token's
    /// `tid` for a `{tenantid}` issuer, nil for any other. The identity's subject is then
    /// `<tid>:<sub>`, because one such issuer speaks for many tenants and nothing makes `sub`
    /// unique across them: Entra scopes it to a tenant (and an app), and another multi-tenant
    /// issuer may number each tenant's users from one. Keyed by `sub` alone, a user of one
    /// tenant would sign in as the user of another who happens to share it. Exact issuers
    /// (Google, Apple, a single tenant) keep `sub` alone, so their identities stay as stored.
    func tenant(of claims: [String: JSONValue]) -> String? {
        guard case .perTenant = self else { return nil }
        return claims["tid"]?.stringValue
    }
}
