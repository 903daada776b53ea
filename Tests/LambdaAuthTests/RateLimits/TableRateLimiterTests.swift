@testable import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// The limiter on its own, on both backends: one conditional update per event, exact counts,
/// fixed hourly windows, a `ttl` just past each window.
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
    func exactlyTheLimitPassesPerKeyAndWindow(backend: FlowWorld.Backend) throws {
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
        #expect(refusals.allSatisfy { $0.code == .rateLimited && $0.retryAfter == 3000 && $0.retryable })
        #expect(refusals.first?.body["error"]?["retryAfter"] == .number(3000))

        // Another key is counted apart; the next window starts from zero.
        #expect(Self.outcome(limiter, key: "198.51.100.1", limit: 30, now: now) == nil)
        #expect(Self.outcome(limiter, key: "203.0.113.7", limit: 30, now: hour + 3600) == nil)

        let counter = try #require(try table.getItem(TableRateLimiter.counterKey(Self.scope, key: "203.0.113.7", windowStart: hour)))
        #expect(counter["count"] == .n(30))
        #expect(counter["ttl"] == .n(hour + 3600 + TableRateLimiter.lingering))
    }

    @Test func keysThatCannotBePartOfAKeyAreHashed() {
        let key = TableRateLimiter.counterKey(Self.scope, key: "a#b", windowStart: 0)
        #expect(key.pk.hasPrefix("RATE#test-ip#sha256:"))
        #expect(TableRateLimiter.counterKey(Self.scope, key: "Ann@Example.com", windowStart: 3600)
            == TableKey(pk: "RATE#test-ip#Ann@Example.com", sk: "WINDOW#3600"))
    }
}
