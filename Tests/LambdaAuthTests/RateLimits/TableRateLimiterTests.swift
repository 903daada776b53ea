@testable import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// The limiter on its own, on both backends: exact counts per key, a limit that holds over every
/// rolling hour (clock moved across hour and slot boundaries), bounded storage with a `ttl`.
@Suite(.serialized) struct TableRateLimiterTests {
    static let scope = RateLimitScope("test-ip")

    static func outcome(_ limiter: TableRateLimiter, key: String, limit: Int, now: Int64) -> AuthError? {
        do {
            try limiter.consume(scope, key: key, limit: RateLimit(limit), now: now)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func exactlyTheLimitPassesPerKeyUntilTheHourHasRolledPast(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let table = try world.table()
        let limiter = TableRateLimiter(table: table)
        // The table hides counters past their ttl by the world's clock: count on that clock.
        let hour = world.now - world.now % 3600
        let now = hour + 600
        let outcomes = (0..<100).map { _ in Self.outcome(limiter, key: "203.0.113.7", limit: 30, now: now) }
        #expect(outcomes.filter { $0 == nil }.count == 30)
        let refusals = outcomes.compactMap { $0 }
        #expect(refusals.count == 70)
        // Counted in the five-minute slot starting at `now`, which every window ending before
        // now + 3600 + 300 reaches.
        #expect(refusals.allSatisfy { $0.code == .rateLimited && $0.retryAfter == 3900 && $0.retryable })
        #expect(refusals.first?.body["error"]?["retryAfter"] == .number(3900))

        // Another key is counted apart; the next clock hour is NOT a fresh budget.
        #expect(Self.outcome(limiter, key: "198.51.100.1", limit: 30, now: now) == nil)
        #expect(Self.outcome(limiter, key: "203.0.113.7", limit: 30, now: hour + 3600)?.code == .rateLimited)
        #expect(Self.outcome(limiter, key: "203.0.113.7", limit: 30, now: now + 3899)?.code == .rateLimited)
        #expect(Self.outcome(limiter, key: "203.0.113.7", limit: 30, now: now + 3900) == nil)

        let counter = try #require(try table.getItem(Keys.rateCounter(Self.scope, key: "203.0.113.7")))
        // The old slot was dropped when the new one was written: storage stays bounded.
        #expect(counter["slots"] == .m([String((now + 3900) / 300): .n(1)]))
        #expect(counter["ttl"] == .n(now + 3900 + 300 + 3600 + TableRateLimiter.lingering))
    }

    /// DynamoDB deletes an item past its `ttl` only when its sweeper comes (moto never does): the
    /// counter is hidden from the read but still there for the write's condition. Counting must
    /// start afresh, not retry until STORE_UNAVAILABLE.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aCounterPastItsTTLButNotYetSweptStartsAfresh(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let key = Keys.rateCounter(Self.scope, key: "203.0.113.9")
        #expect(Self.outcome(TableRateLimiter(table: try world.table()), key: "203.0.113.9", limit: 2, now: world.now) == nil)
        let ttl = try #require(try world.table().getItem(key)?["ttl"]?.int64Value)
        let later = try world.table(at: ttl + 1)
        #expect(try later.getItem(key) == nil, "hidden past its ttl")
        let limiter = TableRateLimiter(table: later)
        #expect(Self.outcome(limiter, key: "203.0.113.9", limit: 2, now: ttl + 1) == nil)
        #expect(Self.outcome(limiter, key: "203.0.113.9", limit: 2, now: ttl + 1) == nil)
        #expect(Self.outcome(limiter, key: "203.0.113.9", limit: 2, now: ttl + 1)?.code == .rateLimited)
        let counter = try #require(try later.getItem(key))
        #expect(counter["version"] == .n(2), "a fresh counter, not the expired one's third version")
    }

    /// Today's probe: a full budget in the last second of one clock hour and another in the first
    /// second of the next was twice the limit within one second.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aBurstAcrossAnHourBoundaryGetsOneBudget(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let limiter = TableRateLimiter(table: try world.table(at: 0))
        let boundary = world.now - world.now % 3600 + 3600
        let before = (0..<10).map { _ in Self.outcome(limiter, key: "victim@example.com", limit: 5, now: boundary - 1) }
        let after = (0..<10).map { _ in Self.outcome(limiter, key: "victim@example.com", limit: 5, now: boundary) }
        #expect(before.filter { $0 == nil }.count == 5)
        #expect(after.allSatisfy { $0?.code == .rateLimited })
    }

    /// Events at irregular times over five hours, the clock moved forward between them: every
    /// window of 3600 seconds holds at most the limit, and the budget does come back.
    @Test(arguments: FlowWorld.Backend.allCases)
    func noRollingHourEverHoldsMoreThanTheLimit(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let limiter = TableRateLimiter(table: try world.table(at: 0))
        var random = SplitMix64(seed: 24)
        var now = world.now
        var accepted: [Int64] = []
        while now < world.now + 5 * 3600 {
            if Self.outcome(limiter, key: "198.51.100.9", limit: 7, now: now) == nil { accepted.append(now) }
            now += Int64(random.next() % 400)
        }
        for end in accepted {
            #expect(accepted.filter { $0 > end - 3600 && $0 <= end }.count <= 7, "window ending at \(end)")
        }
        #expect(accepted.count >= 4 * 7, "the budget comes back as slots leave the window (\(accepted.count) accepted)")
    }

    /// Processes whose clocks differ share one budget, and the counter lives until the slot the
    /// process furthest ahead wrote has left every window.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aClockAheadStillCountsAndKeepsTheCounterAlive(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let table = try world.table(at: 0)
        let limiter = TableRateLimiter(table: table)
        let now = world.now - world.now % 300
        #expect(Self.outcome(limiter, key: "skewed", limit: 2, now: now + 600) == nil, "a process ten minutes ahead")
        #expect(Self.outcome(limiter, key: "skewed", limit: 2, now: now) == nil)
        #expect(Self.outcome(limiter, key: "skewed", limit: 2, now: now)?.code == .rateLimited)
        let counter = try #require(try table.getItem(Keys.rateCounter(Self.scope, key: "skewed")))
        #expect(counter["ttl"] == .n(now + 600 + 300 + 3600 + TableRateLimiter.lingering))
    }

    @Test func retryAfterIsWhenEnoughOldSlotsHaveLeft() {
        let limit = RateLimit(5)
        // Two events in slot 10, three in slot 12; at slot 14 the five fill the window.
        #expect(TableRateLimiter.retryAfter([10: 2, 12: 3], limit: limit, now: 14 * 300 + 7) == (10 + 13) * 300 - (14 * 300 + 7))
        #expect(TableRateLimiter.retryAfter([12: 5], limit: limit, now: 12 * 300) == 13 * 300)
    }

    @Test func keysThatCannotBePartOfAKeyAreHashed() {
        let key = Keys.rateCounter(Self.scope, key: "a#b")
        #expect(key.pk.hasPrefix("RATE#test-ip#sha256:"))
        #expect(Keys.rateCounter(Self.scope, key: "2001:db8:1:2::/64") == TableKey(pk: "RATE#test-ip#2001:db8:1:2::/64", sk: "SLOTS"))
    }
}
