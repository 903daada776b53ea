import Crypto

/// What a limit counts: a name chosen by the flow that calls the limiter (guest creations per
/// source IP; one-time codes per email, per IP). A value, so that a new limit needs no new type.
public struct RateLimitScope: Sendable, Hashable, CustomStringConvertible {
    public let name: String

    /// Letters, digits and `-` only: the name is part of the counter's key.
    public init(_ name: String) {
        precondition(!name.isEmpty && name.utf8.allSatisfy { $0 == UInt8(ascii: "-") || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) },
                     "a rate-limit scope is lowercase letters, digits and '-'")
        self.name = name
    }

    public var description: String { name }

    /// Guest creations per source IP (AUTH_GUEST_RATE).
    public static let guestSignInPerIP = RateLimitScope("guest-ip")
}

/// A number of events allowed per fixed window (an hour unless said otherwise).
public struct RateLimit: Sendable, Equatable {
    public var count: Int
    public var window: Int64

    public init(_ count: Int, per window: Int64 = 3600) {
        precondition(count > 0 && window > 0)
        self.count = count
        self.window = window
    }
}

/// Counts one event against a limit, or refuses it with RATE_LIMITED (`retryAfter`: the seconds
/// left in the window). Whoever calls it decides what a key is (an IP, a lowercased email).
protocol RateLimiting: Sendable {
    func consume(_ scope: RateLimitScope, key: String, limit: RateLimit, now: Int64) throws(AuthError)
}

/// One counter item per (scope, key, window), updated by ONE conditional UpdateItem: the count
/// goes up only while it is below the limit (or the item does not exist yet), so concurrent
/// callers in any number of processes get exactly `limit` successes per window, with no read
/// first. Windows are fixed (aligned on multiples of the window since the epoch); each item
/// carries a `ttl` just past its window's end, and the next window is another item, so an expired
/// counter is never counted again, even by DynamoDB conditions that still see it before its sweep.
///
/// The increment is `SET count = if_not_exists(count, 0) + 1` rather than `ADD`: the two are the
/// same atomic update on DynamoDB, and the expression subset both backends share has no `ADD`.
struct TableRateLimiter: RateLimiting {
    let table: any Table
    /// How long a counter stays after its window ends (clock differences between processes).
    static let lingering: Int64 = 60

    func consume(_ scope: RateLimitScope, key: String, limit: RateLimit, now: Int64) throws(AuthError) {
        let windowStart = now - ((now % limit.window) + limit.window) % limit.window
        let windowEnd = windowStart + limit.window
        do {
            try table.updateItem(
                TableRateLimiter.counterKey(scope, key: key, windowStart: windowStart),
                update: "SET #count = if_not_exists(#count, :zero) + :one, #ttl = :ttl",
                condition: "attribute_not_exists(#count) OR #count < :limit",
                attributes: ExpressionAttributes(names: ["#count": "count", "#ttl": "ttl"],
                                                 values: [":zero": .n(0), ":one": .n(1), ":limit": .n(Int64(limit.count)),
                                                          ":ttl": .n(windowEnd + TableRateLimiter.lingering)]),
                returnValues: .none)
        } catch .conditionFailed {
            var refusal = AuthError(.rateLimited, "too many requests; try again in \(windowEnd - now) seconds",
                                    detail: "rate limit \(scope) reached")
            refusal.retryAfter = max(1, windowEnd - now)
            throw refusal
        } catch {
            throw error.authError
        }
    }

    /// `RATE#<scope>#<key>` / `WINDOW#<window start, epoch seconds>`. The key is hashed when it
    /// could not be part of a key as it is (too long, or with `#`), so no caller input shapes keys.
    static func counterKey(_ scope: RateLimitScope, key: String, windowStart: Int64) -> TableKey {
        let plain = key.utf8.count <= 128 && !key.contains("#") && key.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        let part = plain ? key : "sha256:" + SHA256.hexDigest(of: Array(key.utf8))
        return TableKey(pk: "RATE#\(scope.name)#\(part)", sk: "WINDOW#\(windowStart)")
    }
}
