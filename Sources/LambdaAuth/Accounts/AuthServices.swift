/// The composition root of a handler process: built once from the configuration and kept warm
/// between invocations of a resident Lambda process. It owns the table, the ID token verifier
/// (with its JWKS cache) and the token service, and hands each flow only the parts it uses.
public final class AuthServices: Sendable {
    public let configuration: AuthConfiguration
    public let clock: any Clock
    public let random: any RandomSource
    public let table: any Table
    public let verifier: IDTokenVerifier
    let tokens: TokenService
    let store: AccountStore
    let retry: OptimisticRetry

    public init(configuration: AuthConfiguration, logger: Logger, table: (any Table)? = nil,
                httpClient: (any HTTPClient)? = nil, random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper()) throws(AuthError) {
        self.configuration = configuration
        clock = configuration.clock
        self.random = random
        let httpClient = httpClient ?? CurlHTTPClient()
        let store: any Table
        if let table {
            store = table
        } else {
            store = try makeTable(configuration, clock: configuration.clock)
        }
        self.table = store
        verifier = IDTokenVerifier(configuration: configuration, httpClient: httpClient, clock: configuration.clock, logger: logger)
        tokens = try TokenService(configuration: configuration, table: store, clock: configuration.clock, random: random)
        self.store = AccountStore(table: store, refreshTokenTTL: configuration.refreshTokenTTL)
        retry = OptimisticRetry(sleeper: sleeper, random: random)
    }

    var signIn: SignInFlow {
        SignInFlow(verifier: verifier, tokens: tokens, store: store, clock: clock, random: random, retry: retry,
                   emailLinking: configuration.emailLinking, maxSessions: configuration.maxSessions)
    }

    var refresh: RefreshFlow {
        RefreshFlow(tokens: tokens, store: store, clock: clock, random: random, retry: retry, refreshGrace: configuration.refreshGrace)
    }

    var linkProvider: LinkProviderFlow {
        LinkProviderFlow(verifier: verifier, callerCheck: CallerCheck(tokens: tokens, store: store), store: store, clock: clock, retry: retry)
    }

    /// The access-token key, if one is configured or was created; never creates one.
    public func accessTokenKey() throws(AuthError) -> AccessTokenKey? {
        try tokens.accessTokenIssuer(create: false, logger: Logger(minimumLevel: .error))?.key
    }

    /// The development credentials secret kept in the local store, if one was created; never creates one.
    public func existingDevCredentialsSecret() throws(AuthError) -> String? {
        try DevSecrets.credentialsSecret(in: table, create: false, now: clock.nowSeconds, random: random,
                                         logger: Logger(minimumLevel: .error))
    }
}

/// Random identifiers for users, sessions and token items: 128 bits, lowercase base32.
func newIdentifier(_ random: any RandomSource) -> String {
    Base32.encode(random.bytes(16)).lowercased()
}
