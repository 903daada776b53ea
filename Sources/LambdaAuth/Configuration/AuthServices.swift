import Crypto
import Logging

/// The composition root of a handler process, and the one place that reads `AuthConfiguration`:
/// built once from it and kept warm between invocations of a resident Lambda process. It owns the
/// table, the ID token verifier (with its JWKS cache) and the token service, and hands each flow
/// and handler only the settings and parts it uses.
public final class AuthServices: Sendable {
    private let configuration: AuthConfiguration
    public let clock: any WallClock
    public let random: any RandomSource
    public let table: any Table
    public let verifier: IDTokenVerifier
    let tokens: TokenService
    let store: AccountStore
    let retry: OptimisticRetry
    let apple: AppleAccountTokens
    let logger: Logger
    /// The email-code flow, built once (its email sender, its key source); a failure to build it
    /// (`ses` without a region) is kept and fails the requests that use it, not the handler's start.
    let oneTimeCodesOnUse: Result<OneTimeCodeFlow, AuthError>
    /// The process's one HTTP client (serve's events webhook and the events handler share it).
    let httpClient: any HTTPClient
    /// AUTH_DATA_KEYS, or the local store's dev key, read once and kept.
    let secondFactorSealing: SecondFactorSealing

    public init(configuration: AuthConfiguration, logger: Logger, table: (any Table)? = nil,
                httpClient: (any HTTPClient)? = nil, random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper()) throws(AuthError) {
        self.configuration = configuration
        let clock = configuration.clock
        self.clock = clock
        self.random = random
        let httpClient = httpClient ?? CurlHTTPClient()
        self.httpClient = httpClient
        self.logger = logger
        let table: any Table = if let table { table } else { try makeTable(configuration, clock: clock) }
        self.table = table
        verifier = IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew,
                                   cacheDirectory: configuration.cacheDirectory, httpClient: httpClient, clock: clock, logger: logger)
        tokens = TokenService(settings: configuration.tokenSettings, table: table, clock: clock, random: random)
        store = AuthServices.accountStore(configuration, table: table)
        retry = OptimisticRetry(sleeper: sleeper, random: random)
        apple = AppleAccountTokens(settings: configuration.appleServer, http: httpClient, store: store, clock: clock)
        secondFactorSealing = SecondFactorSealing(keys: ConfiguredOrStoredKey(configured: configuration.dataKeys) { [logger] (create: Bool) throws(AuthError) in
            try DevSecrets.secondFactorDataKey(in: table, create: create, now: clock.nowSeconds, random: random, logger: logger).map { DataKeys([$0]) }
        })
        oneTimeCodesOnUse = Result { () throws(AuthError) in
            try AuthServices.makeOneTimeCodes(configuration, table: table, random: random, httpClient: httpClient, logger: logger)
        }
    }

    /// Secrets, configuration and services from a process environment.
    public static func start(environment: [String: String], logger: Logger) throws(AuthError) -> AuthServices {
        // One HTTP client for the process: the secret's request and every later one share it.
        let http = CurlHTTPClient()
        let resolved = try Startup.resolvedEnvironment(environment, logger: logger, http: http)
        return try AuthServices(configuration: try AuthConfiguration.fromEnvironment(resolved), logger: logger, httpClient: http)
    }

    private static func accountStore(_ configuration: AuthConfiguration, table: any Table) -> AccountStore {
        AccountStore(table: table, refreshTokenTTL: configuration.refreshTokenTTL, guestTTL: configuration.guestTTL,
                     sessionMaxAge: configuration.sessionMaxAge, revocationRetention: configuration.revocationRetention)
    }

    var signIn: SignInFlow {
        SignInFlow(providers: providers, guests: guestSignIn, tokens: tokens, store: store, clock: clock, random: random, retry: retry,
                   deletion: deletion, emailLinking: configuration.emailLinking, maxSessions: configuration.maxSessions,
                   apple: apple, secondFactor: configuration.mfa.isEnabled ? SecondFactorGate(table: table, clock: clock, random: random) : nil)
    }

    var mfa: MFAFlow {
        MFAFlow(settings: configuration.mfa, store: store, sealing: secondFactorSealing, callerCheck: callerCheck, signIn: signIn,
                tokens: tokens, limiter: TableRateLimiter(table: table), clock: clock, random: random, retry: retry)
    }

    /// The registry every handler that takes a proof asks: Google, Apple, each configured OIDC
    /// provider, email codes, guests, passkeys.
    var providers: ProviderRegistry {
        let idTokens = verifier.providers.map(\.name).map { provider -> any SignInProvider in
            IDTokenSignIn(provider: provider, verifier: verifier)
        }
        return ProviderRegistry(entries: idTokens + [EmailCodeSignIn(oneTimeCodes: oneTimeCodesOnUse), GuestSignIn(), passkeys])
    }

    /// The events handler from this process's settings (serve and in-process tests; a deployed
    /// `events` reads its few variables alone).
    func eventsHandler() throws(AuthError) -> EventsHandler {
        try EventsHandler(configuration: configuration, http: httpClient)
    }

    var refresh: RefreshFlow {
        RefreshFlow(tokens: tokens, store: store, clock: clock, random: random, retry: retry, refreshGrace: configuration.refreshGrace)
    }

    var deletion: AccountDeletion { AccountDeletion(store: store, retry: retry) }

    /// The app's hooks from AUTH_HOOKS, their clients over the process's HTTP client.
    func hooks() throws(AuthError) -> Hooks {
        try Hooks.build(configuration.hooks, secret: configuration.hookSecret, lambdaEndpoint: configuration.lambdaEndpoint,
                        region: configuration.awsRegion, credentials: configuration.awsCredentials, http: httpClient, clock: clock,
                        random: random)
    }

    var guestSignIn: GuestSignInFlow {
        GuestSignInFlow(tokens: tokens, store: store, clock: clock, random: random, limiter: TableRateLimiter(table: table),
                        enabled: configuration.guestsEnabled, perSourceIP: RateLimit(configuration.guestRate))
    }

    var appleNotifications: AppleNotificationFlow {
        AppleNotificationFlow(verifier: verifier, store: store, deletion: deletion, clock: clock, retry: retry,
                              clockSkew: configuration.clockSkew)
    }

    private static func makeOneTimeCodes(_ configuration: AuthConfiguration, table: any Table, random: any RandomSource,
                                         httpClient: any HTTPClient, logger: Logger) throws(AuthError) -> OneTimeCodeFlow {
        let sender: any EmailSender
        switch configuration.emailSender {
        case .outbox(let directory):
            sender = OutboxEmailSender(directory: directory, from: configuration.emailFrom ?? "lambda-auth@localhost", random: random)
        case .ses:
            let (region, credentials) = try AWSEnvironment.require(configuration, for: "AUTH_EMAIL_SENDER=ses")
            sender = SESEmailSender(from: configuration.emailFrom ?? "", endpoint: configuration.sesEndpoint ?? "https://email.\(region).amazonaws.com",
                                    region: region, credentials: credentials, http: httpClient)
        }
        let keys = ConfiguredOrStoredKey(configured: configuration.otpKey.map { SymmetricKey(data: $0) }) { (create: Bool) throws(AuthError) in
            try DevSecrets.oneTimeCodeKey(in: table, create: create, now: configuration.clock.nowSeconds, random: random, logger: logger)
                .map { SymmetricKey(data: $0) }
        }
        return OneTimeCodeFlow(
            enabled: configuration.emailEnabled, store: OneTimeCodeStore(table: table),
            key: { (create: Bool) throws(AuthError) -> SymmetricKey? in try keys.key(create: create) },
            sender: sender, limiter: TableRateLimiter(table: table), perEmail: RateLimit(configuration.otpRate),
            perSourceIP: RateLimit(30), ttl: configuration.otpTTL, clock: configuration.clock, random: random)
    }

    var callerCheck: CallerCheck { CallerCheck(tokens: tokens, store: store) }

    var passkeys: PasskeyFlow {
        PasskeyFlow(settings: configuration.passkeys, passkeys: PasskeyStore(table: table), store: store, callerCheck: callerCheck,
                    clock: clock, random: random, retry: retry, limiter: TableRateLimiter(table: table))
    }

    var linkProvider: LinkProviderFlow {
        LinkProviderFlow(callerCheck: callerCheck, store: store, clock: clock, retry: retry, apple: apple)
    }

    var signOut: SignOutFlow { SignOutFlow(tokens: tokens, store: store, clock: clock, retry: retry) }

    var sessions: SessionsFlow { SessionsFlow(callerCheck: callerCheck, store: store, clock: clock, retry: retry) }

    var deleteAccount: DeleteAccountFlow {
        DeleteAccountFlow(callerCheck: callerCheck,
                          reauthentication: Reauthentication(window: configuration.reauthenticationWindow, clockSkew: configuration.clockSkew),
                          store: store, deletion: deletion, clock: clock, retry: retry, apple: apple)
    }

    var testMode: Bool { configuration.testMode }
    var discoveryDocuments: DiscoveryDocuments { DiscoveryDocuments(issuer: configuration.issuer) }
    /// What API Gateway's JWT authorizer checks of our access tokens: our `authorizer`, and serve's stand-in of it.
    public var accessTokenRules: GatewayJWTRules { GatewayJWTRules(issuer: configuration.issuer, audiences: [configuration.accessTokenAudience]) }

    /// The access-token keys, if configured or created; never creates one.
    public func accessTokenKeys() throws(AuthError) -> AccessTokenKeySet? {
        try tokens.accessTokenIssuer(create: false, logger: Logger.jsonLines(level: .error))?.keys
    }

    /// The authorizer's view of the revocation list: one per process, kept warm between invocations.
    public func makeRevocationCache() -> RevocationCache {
        RevocationCache(log: store.revocations, clock: clock)
    }

    var revocationPublisher: RevocationPublisher {
        RevocationPublisher(log: store.revocations, signer: { [tokens, logger] () throws(AuthError) -> AccessTokenIssuer in
            // Creating the dev key here is what a first sign-in would do: a list must be signed.
            guard let issuer = try tokens.accessTokenIssuer(create: true, logger: logger) else {
                throw .internalError("no access-token signing key")
            }
            return issuer
        }, clock: clock)
    }

    /// What operators do to accounts (authctl, serve).
    public var administration: AccountAdministration {
        AccountAdministration(store: store, apple: apple, retry: retry, clock: clock, random: random)
    }

    /// `authctl users prune-guests`: over the table as it physically is (its clock at the epoch
    /// hides nothing expired), deciding with the real clock.
    public static func pruneGuests(configuration: AuthConfiguration, logger: Logger) throws(AuthError) -> GuestPruning.Report {
        let everything = try makeTable(configuration, clock: FixedClock(0))
        return try GuestPruning.prune(store: accountStore(configuration, table: everything), now: configuration.clock.nowSeconds, logger: logger)
    }
}

extension AuthConfiguration {
    var tokenSettings: TokenSettings {
        TokenSettings(issuer: issuer, audience: accessTokenAudience, accessTokenTTL: accessTokenTTL, refreshTokenTTL: refreshTokenTTL,
                      signingKeys: signingKeys, credentialsSecret: credentialsSecret, credentialsTTL: credentialsTTL,
                      sts: stsSettings)
    }

    /// nil unless AUTH_CREDENTIALS=sts (which `validateCombinations` holds to a role and a bucket).
    public var stsSettings: STSCredentialIssuer.Settings? {
        guard credentialsMode == .sts, let stsRoleARN, let userBucket else { return nil }
        return STSCredentialIssuer.Settings(roleARN: stsRoleARN, bucket: userBucket, durationSeconds: credentialsTTL, endpoint: stsEndpoint,
                                            region: awsRegion, credentials: awsCredentials)
    }
}
