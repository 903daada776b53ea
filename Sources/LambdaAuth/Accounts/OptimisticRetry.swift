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

    init(policy: RetryPolicy = OptimisticRetry.contention, sleeper: any Sleeper, random: any RandomSource) {
        self.policy = policy
        self.sleeper = sleeper
        self.random = random
    }

    /// Runs `attempt` until it returns a result (nil: lost a race, try again), at most
    /// `policy.maximumRetries` more times; then the store is too contended (503, retryable).
    func run<Result>(_ operation: String, _ attempt: () throws(AuthError) -> Result?) throws(AuthError) -> Result {
        for retry in 0...policy.maximumRetries {
            if retry > 0 { sleeper.sleep(seconds: policy.delay(beforeRetry: retry - 1, random: random)) }
            if let result = try attempt() { return result }
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "\(operation) gave up")
    }
}
