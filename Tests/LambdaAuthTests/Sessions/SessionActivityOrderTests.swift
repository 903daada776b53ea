@testable import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Session activity to the millisecond (contract section 13): the session limit evicts exactly the
/// least recently active session and `sessions` lists exactly most recent first, even for
/// sessions opened within one second; profiles written with second-precision activity still read
/// right. Both backends, on the worlds' fixed clock (no second ever passes).
@Suite(.serialized) struct SessionActivityOrderTests {
    struct Opened {
        var sessionID: String
        var accessToken: JSONValue
        var refreshToken: JSONValue
    }

    static func signIn(_ world: FlowWorld, _ token: String) throws -> Opened {
        let body = world.signIn(token: token)
        return Opened(sessionID: try #require(body["session"]?["id"]?.stringValue, "\(body)"), accessToken: try #require(body["tokens"]?["accessToken"]),
                      refreshToken: try #require(body["tokens"]?["refreshToken"]))
    }

    static func listed(_ world: FlowWorld, by caller: Opened) throws -> [String] {
        let output = world.run("sessions", ["accessToken": caller.accessToken])
        return try #require(output.responseBody?["sessions"]?.arrayValue, "\(output.stdoutText)").compactMap { $0["id"]?.stringValue }
    }

    static func activity(_ world: FlowWorld, of userID: String) throws -> [String: AttributeValue] {
        try #require(try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE"))?["activeSessions"]?.mapValue)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func sixQuickSignInsEvictTheFirstAndListMostRecentFirst(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(["AUTH_MAX_SESSIONS": "5"], backend: backend)
        let token = world.googleToken(subject: "quick-sessions")
        let opened = try (0..<6).map { _ in try Self.signIn(world, token) }
        let newestFirst = opened.reversed().map(\.sessionID)
        #expect(try Self.listed(world, by: opened[5]) == Array(newestFirst.prefix(5)), "the first session was evicted")
        #expect(world.run("sessions", ["accessToken": opened[0].accessToken]).errorCode == "ACCESS_TOKEN_REVOKED")

        // A refresh is activity: the refreshed session (the oldest left) moves to the front, and the
        // next sign-in evicts the one after it.
        world.advanceClock(by: 1)
        let refreshed = world.run("refresh", ["refreshToken": opened[1].refreshToken])
        #expect(refreshed.errorCode == nil, "\(refreshed.stdoutText)")
        #expect(try Self.listed(world, by: opened[5]) == [opened[1].sessionID] + newestFirst.prefix(4))
        let seventh = try Self.signIn(world, token)
        #expect(try Self.listed(world, by: seventh) == [seventh.sessionID, opened[1].sessionID] + newestFirst.prefix(3))
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func secondPrecisionActivityReadsRightAndIsMigrated(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(["AUTH_MAX_SESSIONS": "3"], backend: backend)
        let token = world.googleToken(subject: "migrated-sessions")
        let opened = try (0..<3).map { _ in try Self.signIn(world, token) }
        let userID = try #require(world.signIn(token: world.googleToken(subject: "migrated-sessions"))["user"]?["id"]?.stringValue)
        // That fourth sign-in evicted the first; write the rest back as an earlier release did: in seconds.
        let table = try world.table()
        var profile = try #require(try table.getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE")))
        let remaining = try Self.activity(world, of: userID).keys.sorted()
        #expect(remaining.count == 3 && !remaining.contains(opened[0].sessionID))
        let seconds = Dictionary(uniqueKeysWithValues: remaining.enumerated().map { ($1, world.now - 100 + Int64($0 * 10)) })
        profile["activeSessions"] = .m(seconds.mapValues { .n($0) })
        try table.putItem(profile)
        for (sessionID, second) in seconds {
            try table.updateItem(TableKey(pk: "USER#\(userID)", sk: "SESSION#\(sessionID)"), update: "SET lastActiveAt = :at", condition: nil,
                                 attributes: ExpressionAttributes(values: [":at": .s(Timestamps.format(second))]), returnValues: .none)
        }

        let oldestFirst = seconds.sorted { $0.value < $1.value }.map(\.key)
        let caller = try Self.signIn(world, token)
        #expect(try Self.listed(world, by: caller) == [caller.sessionID] + oldestFirst.dropFirst().reversed(),
                "the oldest (in seconds) was evicted, the rest are in order")
        let stored = try Self.activity(world, of: userID)
        #expect(stored.count == 3 && stored.values.allSatisfy { ($0.int64Value ?? 0) >= 100_000_000_000 }, "rewritten in milliseconds: \(stored)")
        #expect(stored[oldestFirst[1]]?.int64Value == seconds[oldestFirst[1]]! * 1000)
    }

    @Test func secondsAndMillisecondsAreTold() {
        #expect(SessionActivity.milliseconds(stored: 1_790_000_000) == 1_790_000_000_000)
        #expect(SessionActivity.milliseconds(stored: 1_790_000_000_123) == 1_790_000_000_123)
        let clock = FixedClock(1_790_000_000.5)
        #expect(SessionActivity.next(after: [], clock: clock) == 1_790_000_000_500)
        #expect(SessionActivity.next(after: [1_790_000_000_500, 7], clock: clock) == 1_790_000_000_501)
    }
}
