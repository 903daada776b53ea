/// The one retry policy of the account flows' optimistic loops: read, decide, write conditionally;
/// a write whose condition failed because another request changed the items first is a lost
/// race, and the flow reads again after a jittered wait.
///
/// Without the waits, contenders that lost together retry together and most lose again: 16
/// simultaneous sign-ins of one user on DynamoDB ran out of attempts. Each winner makes the
/// others' next attempt lose again, so the waits must outlast the contenders' turns one after
/// another: windows of 20 ms doubling to 1 s, ten retries, about 5 s at the very worst.
struct OptimisticRetry: Sendable {
    static let contention = RetryPolicy(maximumRetries: 10, baseDelay: 0.02, maximumDelay: 1)

    let policy: RetryPolicy
    let sleeper: any Sleeper
    let random: any RandomSource
    /// The Lambda deadline is real time, whatever clock the flows run on (AUTH_NOW).
    let deadlineClock: any WallClock

    init(policy: RetryPolicy = OptimisticRetry.contention, sleeper: any Sleeper, random: any RandomSource,
         deadlineClock: any WallClock = SystemClock()) {
        self.policy = policy
        self.sleeper = sleeper
        self.random = random
        self.deadlineClock = deadlineClock
    }

    /// Runs `attempt` until it returns a result (nil: lost a race, try again), at most
    /// `policy.maximumRetries` more times; then the store is too contended (503, retryable). The
    /// waits never outlast the invocation (InvocationDeadline): Lambda would kill the process
    /// mid-wait instead of it answering that retryable error.
    func run<Result>(_ operation: String, _ attempt: () throws(AuthError) -> Result?) throws(AuthError) -> Result {
        for retry in 0...policy.maximumRetries {
            if retry > 0 {
                let delay = policy.delay(beforeRetry: retry - 1, random: random)
                switch InvocationDeadline.cap(delay, now: deadlineClock.now()) {
                case .exhausted: throw tooContended(operation, detail: "out of invocation time")
                case .seconds(let capped): sleeper.sleep(seconds: min(delay, capped))
                case .none: break
                }
            }
            if let result = try attempt() { return result }
        }
        throw tooContended(operation, detail: "out of attempts")
    }

    private func tooContended(_ operation: String, detail: String) -> AuthError {
        AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "\(operation) gave up (\(detail))")
    }
}
