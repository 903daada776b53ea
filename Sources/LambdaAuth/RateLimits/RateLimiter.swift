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
    /// Passkey login-options per source IP (AUTH_PASSKEY_OPTIONS_RATE): each writes a challenge.
    public static let passkeyOptionsPerIP = RateLimitScope("passkey-options-ip")
}

/// A number of events allowed in any window of `window` seconds (an hour unless said otherwise).
public struct RateLimit: Sendable, Equatable {
    public var count: Int
    public var window: Int64

    public init(_ count: Int, per window: Int64 = 3600) {
        precondition(count > 0 && window > 0)
        self.count = count
        self.window = window
    }

    /// Events are counted in slots of a twelfth of the window (five minutes of an hour).
    var slot: Int64 { max(1, window / TableRateLimiter.slotsPerWindow) }
    /// Slots before the current one that a rolling window reaching back from now can touch.
    var slotsBack: Int64 { (window + slot - 1) / slot }
}

/// Counts one event against a limit, or refuses it with RATE_LIMITED (`retryAfter`: the seconds
/// until one more event would be allowed). Whoever calls it decides what a key is (an IP, an email).
protocol RateLimiting: Sendable {
    func consume(_ scope: RateLimitScope, key: String, limit: RateLimit, now: Int64) throws(AuthError)
}

/// A limit that holds over ANY rolling window, not only over clock-aligned ones (with fixed hour
/// windows, `limit` events at 10:59:59 and `limit` more at 11:00:00 made twice the limit in one
/// second). One item per (scope, key) holds the counts of the last few slots of a twelfth of the
/// window each; an event is allowed only while the slots a window ending now can reach, the
/// current one and the `slotsBack` before it, hold fewer than `limit` events together. Those
/// slots cover every window that ends now, so no rolling window ever holds more than `limit`.
/// The price is conservatism: an event stays counted for up to one slot (5 minutes an hour)
/// longer than a window. Storage is bounded: at most `slotsBack + 1` counts, older ones dropped
/// at each write, and a `ttl` after which all of them are dead.
///
/// A condition expression cannot add up slots, so each event is a strongly consistent GetItem
/// and a PutItem conditional on the `version` read: concurrent callers in any number of
/// processes get exactly the limit (a loser re-reads; every lost race is someone else's win).
struct TableRateLimiter: RateLimiting {
    let table: any Table
    static let slotsPerWindow: Int64 = 12
    /// How long a counter stays after its last slot could matter (clock differences between processes).
    static let lingering: Int64 = 60
    /// Every lost race is another caller's success, so this only bounds a pathological store.
    static let maximumAttempts = 64

    func consume(_ scope: RateLimitScope, key: String, limit: RateLimit, now: Int64) throws(AuthError) {
        try consume(scope, at: Keys.rateCounter(scope, key: key), limit: limit, now: now)
    }

    /// The same count kept in an item a flow chooses: the second factor's wrong codes live in the
    /// user's partition, where the user's Query reads them with the rest.
    func consume(_ scope: RateLimitScope, at itemKey: TableKey, limit: RateLimit, now: Int64) throws(AuthError) {
        let current = TableRateLimiter.floorDivide(now, limit.slot)
        for _ in 0..<TableRateLimiter.maximumAttempts {
            let stored = try table.read(itemKey)
            var slots = TableRateLimiter.slots(of: stored, from: current - limit.slotsBack)
            let counted = slots.values.reduce(0, +)
            guard counted < Int64(limit.count) else { throw TableRateLimiter.refusal(scope, slots, limit: limit, now: now) }
            slots[current, default: 0] += 1
            let version = stored?["version"]?.int64Value
            var item = itemKey.item
            item["slots"] = .m(Dictionary(uniqueKeysWithValues: slots.map { (String($0.key), AttributeValue.n($0.value)) }))
            item["version"] = .n((version ?? 0) + 1)
            // A slot a process with a clock ahead of ours wrote counts until it too has left.
            let newest = slots.keys.max() ?? current
            item["ttl"] = .n((newest + limit.slotsBack + 1) * limit.slot + TableRateLimiter.lingering)
            do {
                if let version {
                    try table.putItem(item, condition: "#version = :read",
                                      attributes: ExpressionAttributes(names: ["#version": "version"], values: [":read": .n(version)]))
                } else {
                    // No counter to read may still be one DynamoDB keeps past its ttl until its
                    // sweeper runs (hours, even days): the read hides it, a condition sees it.
                    try table.putItem(item, condition: "attribute_not_exists(PK) OR #ttl < :now",
                                      attributes: ExpressionAttributes(names: ["#ttl": "ttl"], values: [":now": .n(now)]))
                }
                return
            } catch .conditionFailed {
                continue
            } catch {
                throw error.authError
            }
        }
        throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "rate counter \(scope): too many lost races")
    }

    /// RATE_LIMITED with the seconds until one more event fits.
    static func refusal(_ scope: RateLimitScope, _ slots: [Int64: Int64], limit: RateLimit, now: Int64) -> AuthError {
        let retryAfter = TableRateLimiter.retryAfter(slots, limit: limit, now: now)
        var refusal = AuthError(.rateLimited, "too many requests; try again in \(retryAfter) seconds", detail: "rate limit \(scope) reached")
        refusal.retryAfter = retryAfter
        return refusal
    }

    /// Refuses as `consume` would, without counting: for a limit on failures, checked before the
    /// attempt (whose success must not be let through once the failures are used up).
    static func check(_ scope: RateLimitScope, counter: Item?, limit: RateLimit, now: Int64) throws(AuthError) {
        let slots = slots(of: counter, from: floorDivide(now, limit.slot) - limit.slotsBack)
        if slots.values.reduce(0, +) >= Int64(limit.count) { throw refusal(scope, slots, limit: limit, now: now) }
    }

    /// Slot index → count, for the slots from `first` on (older ones no window reaches any more).
    static func slots(of item: Item?, from first: Int64) -> [Int64: Int64] {
        var slots: [Int64: Int64] = [:]
        for (name, value) in item?["slots"]?.mapValue ?? [:] {
            if let index = Int64(name), index >= first, let count = value.int64Value, count > 0 { slots[index] = count }
        }
        return slots
    }

    /// Seconds until the oldest counted slots have left every window that ends then, enough of
    /// them for one more event to fit.
    static func retryAfter(_ slots: [Int64: Int64], limit: RateLimit, now: Int64) -> Int64 {
        var remaining = slots.values.reduce(0, +)
        for (index, count) in slots.sorted(by: { $0.key < $1.key }) {
            remaining -= count
            // Slot `index` stops counting once the current slot is index + slotsBack + 1.
            if remaining < Int64(limit.count) { return max(1, (index + limit.slotsBack + 1) * limit.slot - now) }
        }
        return 1
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }
}
