#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waiting between retries. Injected so that tests observe the delays instead of sleeping them.
public protocol Sleeper: Sendable {
    func sleep(seconds: Double)
}

public struct SystemSleeper: Sleeper {
    public init() {}

    public func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
    }
}

/// Exponential backoff with full jitter (AWS's recommendation): before retry n (0-based) wait a
/// uniformly random time in [0, min(cap, base · 2ⁿ)]. Spreading retries over the whole window is
/// what keeps a throttled fleet of Lambdas from retrying in lockstep.
public struct RetryPolicy: Sendable, Equatable {
    public var maximumRetries: Int
    public var baseDelay: Double
    public var maximumDelay: Double

    public init(maximumRetries: Int, baseDelay: Double, maximumDelay: Double) {
        self.maximumRetries = maximumRetries
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// At most 3 retries, base 50 ms, cap 1 s (issue 6).
    public static let aws = RetryPolicy(maximumRetries: 3, baseDelay: 0.05, maximumDelay: 1)

    /// The ceiling of the wait before retry `retry` (0 for the first retry).
    public func window(beforeRetry retry: Int) -> Double {
        var window = baseDelay
        for _ in 0..<min(retry, 62) where window < maximumDelay { window *= 2 }
        return min(maximumDelay, window)
    }

    public func delay(beforeRetry retry: Int, random: any RandomSource) -> Double {
        window(beforeRetry: retry) * RetryPolicy.unitInterval(random)
    }

    /// A uniform value in [0, 1] from 53 random bits.
    static func unitInterval(_ random: any RandomSource) -> Double {
        let bytes = random.bytes(8)
        var word: UInt64 = 0
        for byte in bytes { word = word << 8 | UInt64(byte) }
        return Double(word >> 11) / Double((1 as UInt64) << 53 - 1)
    }
}
