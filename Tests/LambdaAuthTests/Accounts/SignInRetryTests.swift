@testable import LambdaAuth
import LambdaAuthTestSupport
import Logging
import Synchronization
import Testing

/// What sign-in's optimistic retries may not do (issue 24, section 5): mint temporary credentials
/// once per lost race (STS may be behind them), or wait past the Lambda deadline.
@Suite struct SignInRetryTests {
    /// Counts the mints and mints nothing real: the flow only carries what it gets.
    final class CountingTokens: TokenIssuing {
        let minted = Mutex(0)
        let base: TokenService

        init(_ base: TokenService) { self.base = base }

        func issueTokens(userID: String, sessionID: String, refresh: RefreshTokenCredential, anonymous: Bool,
                         appMetadata: [String: JSONValue], assurance: Assurance, claimsHook: AccessTokenClaimsCall,
                         logger: Logger) throws(AuthError) -> IssuedTokens {
            minted.withLock { $0 += 1 }
            return try base.issueTokens(userID: userID, sessionID: sessionID, refresh: refresh, anonymous: anonymous,
                                        appMetadata: appMetadata, assurance: assurance, claimsHook: claimsHook, logger: logger)
        }

        func issueAccessToken(userID: String, sessionID: String, anonymous: Bool, appMetadata: [String: JSONValue],
                              assurance: Assurance, claimsHook: AccessTokenClaimsCall,
                              logger: Logger) throws(AuthError) -> (accessToken: String, lifetime: Int64) {
            try base.issueAccessToken(userID: userID, sessionID: sessionID, anonymous: anonymous, appMetadata: appMetadata,
                                      assurance: assurance, claimsHook: claimsHook, logger: logger)
        }

        func verifyAccessToken(_ token: String, logger: Logger) throws(AuthError) -> AccessTokenClaims {
            try base.verifyAccessToken(token, logger: logger)
        }
    }

    /// The first `losing` transactions lose on the identity's link, as a concurrent first
    /// sign-in of the identity would make them; nothing is written, unless `committing`: then
    /// each is written and only its answer says it lost (a retried request whose first try
    /// committed).
    final class LosingTable: Table {
        let base: any Table
        let losses: Mutex<Int>
        let committing: Bool

        init(_ base: any Table, losing: Int, committing: Bool = false) {
            self.base = base
            losses = Mutex(losing)
            self.committing = committing
        }

        func transactWrite(_ actions: [TransactWriteAction]) throws(TableError) {
            if losses.withLock({ left in defer { left -= 1 }; return left > 0 }) {
                if committing { try base.transactWrite(actions) }
                throw .transactionCanceled(reasons: actions.map { _ in .conditionalCheckFailed })
            }
            try base.transactWrite(actions)
        }
        func getItem(_ key: TableKey) throws(TableError) -> Item? { try base.getItem(key) }
        func putItem(_ item: Item, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
            try base.putItem(item, condition: condition, attributes: attributes)
        }
        func updateItem(_ key: TableKey, update: String, condition: String?, attributes: ExpressionAttributes,
                        returnValues: ReturnValues) throws(TableError) -> Item? {
            try base.updateItem(key, update: update, condition: condition, attributes: attributes, returnValues: returnValues)
        }
        func deleteItem(_ key: TableKey, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
            try base.deleteItem(key, condition: condition, attributes: attributes)
        }
        func query(_ request: QueryRequest) throws(TableError) -> QueryPage { try base.query(request) }
        func scan(limit: Int?, exclusiveStartKey: Item?) throws(TableError) -> QueryPage { try base.scan(limit: limit, exclusiveStartKey: exclusiveStartKey) }
    }

    struct Identity: IdentityVerifying {
        func verify(_ token: String, provider: ProviderName, nonce: String?) throws(AuthError) -> VerifiedIdentity {
            VerifiedIdentity(provider: .google, subject: token, email: nil, emailVerified: false, isPrivateEmail: false,
                             name: nil, picture: nil, claims: ["aud": "client"])
        }
    }

    struct NoSleep: Sleeper {
        func sleep(seconds: Double) {}
    }

    final class RecordingSleeper: Sleeper {
        let slept = Mutex<[Double]>([])
        func sleep(seconds: Double) { slept.withLock { $0.append(seconds) } }
    }

    @Test(arguments: [false, true])
    func lostRacesNeverMintAgain(committing: Bool) throws {
        let directory = TestSupport.temporaryDirectory("mint-once")
        defer { TestSupport.removeTree(directory) }
        let clock = FixedClock(Double(TestIssuer().now))
        let table = LosingTable(LocalTable(directory: directory, clock: clock), losing: committing ? 1 : 4, committing: committing)
        let configuration = try AuthConfiguration.fromEnvironment(["AUTH_STORE": directory])
        let tokens = CountingTokens(TokenService(settings: configuration.tokenSettings, table: table, clock: clock, random: SystemRandomSource()))
        let store = AccountStore(table: table, refreshTokenTTL: 3600)
        let retry = OptimisticRetry(sleeper: NoSleep(), random: SystemRandomSource())
        let guests = GuestSignInFlow(tokens: tokens, store: store, clock: clock, random: SystemRandomSource(), limiter: TableRateLimiter(table: table),
                                     enabled: false, perSourceIP: RateLimit(1))
        let flow = SignInFlow(providers: ProviderRegistry(entries: [IDTokenSignIn(provider: .google, verifier: Identity())]), guests: guests,
                              tokens: tokens, store: store, clock: clock, random: SystemRandomSource(), retry: retry,
                              deletion: AccountDeletion(store: store, retry: retry), emailLinking: .verified, maxSessions: 5,
                              apple: AppleAccountTokens(settings: nil, http: CurlHTTPClient(), store: store, clock: clock))
        let request = SignInRequest(body: RequestBody(["provider": "google", "idToken": "mint-once"]), origin: .direct)
        let result = try flow.signIn(request, logger: Logger(label: "test"))
        #expect(result.isNewUser != committing, "a creation whose answer was lost is found as a returning user")
        #expect(tokens.minted.withLock { $0 } == 1, "lost races, one mint")
        #expect(try store.user(result.user.profile.userID)?.profile.activeSessions.count == 1, "one session, whatever was retried")
        #expect(try store.linkedUserID(.google, "mint-once") == result.user.profile.userID)
        #expect(try store.refreshToken(presented: result.tokens.refreshToken).familyID == result.session.sessionID,
                "the tokens answered are the session stored")
    }

    @Test func retriesNeverWaitPastTheInvocationDeadline() throws {
        let sleeper = RecordingSleeper()
        let now = 1_790_000_000.0
        let retry = OptimisticRetry(policy: RetryPolicy(maximumRetries: 10, baseDelay: 2, maximumDelay: 2), sleeper: sleeper,
                                    random: SeededRandomSource(seed: 7), deadlineClock: FixedClock(now))
        var attempts = 0
        let error = try #require(throws: AuthError.self) {
            try InvocationDeadline.withDeadline(milliseconds: Int64((now + 0.75) * 1000)) {
                try retry.run("test") { () throws(AuthError) -> Void? in
                    attempts += 1
                    return nil
                }
            }
        }
        #expect(error.code == .storeUnavailable && error.retryable)
        let slept = sleeper.slept.withLock { $0 }
        #expect(!slept.isEmpty && slept.allSatisfy { $0 <= 0.5 }, "each wait is capped by the 0.5 s left after the answer margin: \(slept)")
        #expect(attempts == 11, "the clock does not move here, so every retry still runs")

        let outOfTime = OptimisticRetry(sleeper: sleeper, random: SystemRandomSource(), deadlineClock: FixedClock(now + 1))
        attempts = 0
        let exhausted = try #require(throws: AuthError.self) {
            try InvocationDeadline.withDeadline(milliseconds: Int64((now + 0.75) * 1000)) {
                try outOfTime.run("test") { () throws(AuthError) -> Void? in
                    attempts += 1
                    return nil
                }
            }
        }
        #expect(exhausted.code == .storeUnavailable && attempts == 1, "no wait, no second attempt once the time is gone")
    }
}
