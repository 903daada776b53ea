import Crypto

/// Everything a flow needs, built once per process from the configuration and kept warm between
/// invocations of a resident Lambda process: the table, the ID token verifier (with its JWKS
/// cache), the access-token key and the credential issuer.
public final class AuthServices: @unchecked Sendable {
    public let configuration: AuthConfiguration
    public let clock: any Clock
    public let random: any RandomSource
    /// Waits between optimistic retries of a contended write (`contentionBackoff`).
    public let sleeper: any Sleeper
    public let table: any Table
    public let verifier: IDTokenVerifier
    let httpClient: any HTTPClient
    private let lock = Mutex()
    private var cachedAccessTokenIssuer: AccessTokenIssuer?
    private var cachedCredentialIssuer: (any CredentialIssuer)?

    public init(configuration: AuthConfiguration, logger: Logger, table: (any Table)? = nil,
                httpClient: (any HTTPClient)? = nil, random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper()) throws(AuthError) {
        self.configuration = configuration
        self.clock = configuration.clock
        self.random = random
        self.sleeper = sleeper
        let httpClient = httpClient ?? CurlHTTPClient()
        self.httpClient = httpClient
        if let table {
            self.table = table
        } else {
            self.table = try makeTable(configuration, clock: configuration.clock)
        }
        self.verifier = IDTokenVerifier(configuration: configuration, httpClient: httpClient, clock: configuration.clock, logger: logger)
        if let pem = configuration.signingKeyPEM {
            cachedAccessTokenIssuer = AccessTokenIssuer(key: try AccessTokenKey(pem: pem), issuer: configuration.issuer,
                                                        lifetime: configuration.accessTokenTTL)
        }
    }

    /// Jittered waits before retrying a transaction that lost an optimistic race (a profile
    /// version another sign-in bumped first). Without them, contenders that lost together retry
    /// together and most lose again: 16 simultaneous sign-ins of one user on DynamoDB ran out
    /// of attempts. Each winner makes the others' next attempt lose again, so the waits must
    /// outlast the contenders' turns one after another: windows of 20 ms doubling to 1 s, ten
    /// retries, about 5 s at the very worst.
    static let contentionBackoff = RetryPolicy(maximumRetries: 10, baseDelay: 0.02, maximumDelay: 1)

    func waitAfterLosingRace(_ attempt: Int) {
        sleeper.sleep(seconds: AuthServices.contentionBackoff.delay(beforeRetry: attempt, random: random))
    }

    /// The access-token issuer; with no configured key, the dev key inside the local store, which
    /// is created only when `create` (issuing paths), never by a verification.
    func accessTokenIssuer(create: Bool, logger: Logger) throws(AuthError) -> AccessTokenIssuer? {
        if let cached = lock.withLock({ cachedAccessTokenIssuer }) { return cached }
        guard let key = try DevSecrets.signingKey(in: table, create: create, now: clock.nowSeconds, logger: logger) else {
            return nil
        }
        let issuer = AccessTokenIssuer(key: key, issuer: configuration.issuer, lifetime: configuration.accessTokenTTL)
        lock.withLock { cachedAccessTokenIssuer = issuer }
        return issuer
    }

    /// The access-token key, if one is configured or was created; never creates one.
    public func accessTokenKey() throws(AuthError) -> AccessTokenKey? {
        try accessTokenIssuer(create: false, logger: Logger(minimumLevel: .error))?.key
    }

    /// The development credentials secret kept in the local store, if one was created; never creates one.
    public func existingDevCredentialsSecret() throws(AuthError) -> String? {
        try DevSecrets.credentialsSecret(in: table, create: false, now: clock.nowSeconds, random: random,
                                         logger: Logger(minimumLevel: .error))
    }

    func credentialIssuer(logger: Logger) throws(AuthError) -> any CredentialIssuer {
        if let cached = lock.withLock({ cachedCredentialIssuer }) { return cached }
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
        lock.withLock { cachedCredentialIssuer = issuer }
        return issuer
    }
}

/// Random identifiers for users, sessions and token items: 128 bits, lowercase base32.
func newIdentifier(_ random: any RandomSource) -> String {
    Base32.encode(random.bytes(16)).lowercased()
}
