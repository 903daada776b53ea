/// The time by which the current Lambda invocation must answer, so that outgoing requests never
/// outlive it: a 3 s DynamoDB or STS timeout with 1 s of invocation left would otherwise let
/// Lambda kill the process mid-request instead of the handler answering a clean, retryable error.
/// Set by the invocation path around each handler call; nil outside an invocation (stdin mode has
/// no deadline).
public enum InvocationDeadline {
    /// Epoch seconds.
    @TaskLocal public static var current: Double?

    /// Kept free at the end of an invocation to turn a timeout into a response and post it.
    package static let answerMargin = 0.25

    package enum Timeout: Equatable {
        case none
        case seconds(Double)
        /// The invocation has no time left for another request.
        case exhausted
    }

    /// `timeout` (seconds, zero or less meaning none) capped by what is left of the current
    /// invocation after the answer margin.
    package static func cap(_ timeout: Double, now: Double) -> Timeout {
        guard let deadline = current else { return timeout > 0 ? .seconds(timeout) : .none }
        let left = deadline - answerMargin - now
        guard left > 0 else { return .exhausted }
        return .seconds(timeout > 0 ? min(timeout, left) : left)
    }

    /// False once the current invocation has no time left for another request: retry loops stop
    /// there instead of waiting out their backoff past the deadline.
    package static func hasTimeLeft(now: Double) -> Bool { cap(0, now: now) != .exhausted }

    /// Runs `body` with `deadlineMilliseconds` (the Runtime API's `Lambda-Runtime-Deadline-Ms`) as
    /// the current deadline.
    public static func withDeadline<Result>(milliseconds deadlineMilliseconds: Int64?, _ body: () throws -> Result) rethrows -> Result {
        try $current.withValue(deadlineMilliseconds.map { Double($0) / 1000 }, operation: body)
    }
}
