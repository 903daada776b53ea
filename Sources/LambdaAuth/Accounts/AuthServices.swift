import Crypto
import Logging

/// The composition root of a handler process: built once from the configuration and kept warm
/// between invocations of a resident Lambda process. It owns the table, the ID token verifier
/// (with its JWKS cache) and the token service, and hands each flow only the parts it uses.
public final class AuthServices: Sendable {
    public let configuration: AuthConfiguration
    public let clock: any WallClock
    public let random: any RandomSource
    public let table: any Table
    public let verifier: IDTokenVerifier
    let tokens: TokenService
    let store: AccountStore
    let retry: OptimisticRetry
    let apple: AppleAccountTokens
    let httpClient: any HTTPClient
    let logger: Logger
    /// Built once (its email sender, its key source); a failure to build it (`ses` without a
    /// region) is kept and thrown by every use, and only by a use.
    private let oneTimeCodeFlow: Result<OneTimeCodeFlow, AuthError>

    public init(configuration: AuthConfiguration, logger: Logger, table: (any Table)? = nil,
                httpClient: (any HTTPClient)? = nil, random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper()) throws(AuthError) {
        self.configuration = configuration
        clock = configuration.clock
        self.random = random
        let httpClient = httpClient ?? CurlHTTPClient()
        self.httpClient = httpClient
        self.logger = logger
        let store: any Table
        if let table {
            store = table
        } else {
            store = try makeTable(configuration, clock: configuration.clock)
        }
        self.table = store
        verifier = IDTokenVerifier(configuration: configuration, httpClient: httpClient, clock: configuration.clock, logger: logger)
        tokens = try TokenService(configuration: configuration, table: store, clock: configuration.clock, random: random)
        self.store = AccountStore(table: store, refreshTokenTTL: configuration.refreshTokenTTL, guestTTL: configuration.guestTTL,
                                  sessionMaxAge: configuration.sessionMaxAge, revocationRetention: configuration.revocationRetention)
        retry = OptimisticRetry(sleeper: sleeper, random: random)
        apple = AppleAccountTokens(settings: configuration.appleServer, http: httpClient, store: self.store, clock: configuration.clock)
        oneTimeCodeFlow = Result { () throws(AuthError) in
            try AuthServices.makeOneTimeCodes(configuration, table: store, random: random, httpClient: httpClient, logger: logger)
        }
    }

    var signIn: SignInFlow {
        SignInFlow(providers: providers, guests: guestSignIn, tokens: tokens, store: store, clock: clock, random: random, retry: retry,
                   deletion: deletion, emailLinking: configuration.emailLinking, maxSessions: configuration.maxSessions,
                   apple: apple)
    }

    var refresh: RefreshFlow {
        RefreshFlow(tokens: tokens, store: store, clock: clock, random: random, retry: retry, refreshGrace: configuration.refreshGrace)
    }

    var deletion: AccountDeletion { AccountDeletion(store: store, retry: retry) }

    var guestSignIn: GuestSignInFlow {
        GuestSignInFlow(tokens: tokens, store: store, clock: clock, random: random, limiter: TableRateLimiter(table: table),
                        enabled: configuration.guestsEnabled, perSourceIP: RateLimit(configuration.guestRate))
    }

    var appleNotifications: AppleNotificationFlow {
        AppleNotificationFlow(verifier: verifier, store: store, deletion: deletion, clock: clock, retry: retry,
                              clockSkew: configuration.clockSkew)
    }

    var oneTimeCodes: OneTimeCodeFlow {
        get throws(AuthError) { try oneTimeCodeFlow.get() }
    }

    private static func makeOneTimeCodes(_ configuration: AuthConfiguration, table: any Table, random: any RandomSource,
                                         httpClient: any HTTPClient, logger: Logger) throws(AuthError) -> OneTimeCodeFlow {
        let clock = configuration.clock
        let sender: any EmailSender
        switch configuration.emailSender {
        case .outbox(let directory):
            sender = OutboxEmailSender(directory: directory, from: configuration.emailFrom ?? "lambda-auth@localhost", random: random)
        case .ses:
            let (region, credentials) = try AWSEnvironment.require(configuration, for: "AUTH_EMAIL_SENDER=ses")
            sender = SESEmailSender(from: configuration.emailFrom ?? "", endpoint: configuration.sesEndpoint ?? "https://email.\(region).amazonaws.com",
                                    region: region, credentials: credentials, http: httpClient)
        }
        let keys = OneTimeCodeKeySource(configured: configuration.otpKey, table: table, clock: clock, random: random, logger: logger)
        return OneTimeCodeFlow(
            enabled: configuration.emailEnabled, store: OneTimeCodeStore(table: table),
            key: { (create: Bool) throws(AuthError) -> SymmetricKey? in try keys.key(create: create) },
            sender: sender, limiter: TableRateLimiter(table: table), perEmail: RateLimit(configuration.otpRate),
            perSourceIP: RateLimit(30), ttl: configuration.otpTTL, clock: clock, random: random)
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

    /// What an operator needs to see of a user (`authctl users show`): the `user` object of the
    /// responses, its sessions with their state, its refresh tokens counted by status, and
    /// whether a deletion is pending. nil when there is no such user (leftovers of an interrupted
    /// deletion are counted under `leftoverItems`).
    public func describeUser(_ userID: String) throws(AuthError) -> JSONValue? {
        guard let user = try store.user(userID) else {
            let leftovers = try store.deletableItems(of: userID)
            return leftovers.isEmpty ? nil : ["id": .string(userID), "leftoverItems": .number(Int64(leftovers.count))]
        }
        let sessions = try store.sessions(of: userID).sorted { $0.createdAt < $1.createdAt }.map { session -> JSONValue in
            ["id": .string(session.sessionID), "device": .object(session.device.mapValues(JSONValue.string)),
             "createdAt": .string(Timestamps.format(session.createdAt)), "lastActiveAt": .string(Timestamps.format(session.lastActiveAt)),
             "status": .string(user.profile.activeSessions[session.sessionID] != nil ? session.status.rawValue : SessionStatus.revoked.rawValue)]
        }
        var tokens: [String: Int64] = [:]
        for record in try store.refreshTokens(of: userID) { tokens[record.status.rawValue, default: 0] += 1 }
        return ["user": user.json, "sessions": .array(sessions), "refreshTokens": .object(tokens.mapValues { .number($0) }),
                "deletionRequestedAt": user.profile.deletionRequestedAt.map { .string(Timestamps.format($0)) } ?? .null]
    }

    /// The same deletion `delete-account` runs, for operators (`authctl users delete`): marks the
    /// user (no caller, no re-authentication) and deletes every item. False when there is no such user.
    /// Apple's stored token is revoked first, as delete-account does (PROVIDER_UNAVAILABLE: nothing deleted).
    public func deleteUser(_ userID: String, logger: Logger) throws(AuthError) -> Bool {
        try deletion.deleteWithoutCaller(userID: userID, now: clock.nowSeconds, logger: logger) { () throws(AuthError) in
            try apple.revokeStored(userID: userID, logger: logger)
        }
    }

    /// The access-token keys, if configured or created; never creates one.
    public func accessTokenKeys() throws(AuthError) -> AccessTokenKeySet? {
        try tokens.accessTokenIssuer(create: false, logger: Logger.jsonLines(level: .error))?.keys
    }

    /// The development credentials secret kept in the local store, if one was created; never creates one.
    public func existingDevCredentialsSecret() throws(AuthError) -> String? {
        try DevSecrets.credentialsSecret(in: table, create: false, now: clock.nowSeconds, random: random,
                                         logger: Logger.jsonLines(level: .error))
    }
}

/// Random identifiers for users, sessions and token items: 128 bits, lowercase base32.
func newIdentifier(_ random: any RandomSource) -> String {
    Base32.encode(random.bytes(16)).lowercased()
}
