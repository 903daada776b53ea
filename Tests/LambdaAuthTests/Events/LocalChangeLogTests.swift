@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTestSupport
import Testing

/// The local store's change log (contract section 22): the flows' commits come back as stream
/// records and events, in commit order, across checkpoints, without duplicates, and a refused
/// request adds none.
@Suite(.serialized) struct LocalChangeLogTests {
    static func events(_ world: FlowWorld) throws -> [AuthEvent] {
        let table = LocalTable(directory: world.storeDirectory, clock: SystemClock())
        return try table.changeRecords().compactMap { ItemEvents.event(for: $0, options: ItemEvents.Options(source: "test")) }
    }

    @Test func theFlowsCommitsPublishTheirEventsWithTheReasonsTheirWritesRecorded() throws {
        let world = FlowWorld(["AUTH_MAX_SESSIONS": "2"])
        let first = world.signIn(token: world.googleToken(subject: "events-1", email: "events-1@example.com"))
        let userID = try #require(first["user"]?["id"]?.stringValue)
        #expect(try Self.events(world).map(\.type) == [.userCreated, .identityLinked, .sessionStarted])

        // Refused: a token for another audience. Nothing is published.
        let before = try Self.events(world).count
        let refused = world.run("signin", ["provider": "google", "idToken": .string(world.googleToken(subject: "events-1", changes: ["aud": "other"]))])
        #expect(refused.errorCode != nil)
        #expect(try Self.events(world).count == before)

        // A second and a third sign-in: the third evicts the first session.
        let second = world.signIn(token: world.googleToken(subject: "events-1", email: "events-1@example.com"))
        world.signIn(token: world.googleToken(subject: "events-1", email: "events-1@example.com"))
        // Reuse: the second session's token used twice past the grace period.
        let refreshToken = try #require(second["tokens"]?["refreshToken"])
        #expect(world.run("refresh", ["refreshToken": refreshToken]).errorCode == nil)
        world.advanceClock(by: 120)
        #expect(world.run("refresh", ["refreshToken": refreshToken]).errorCode == "REFRESH_TOKEN_REUSED")
        let ended = try Self.events(world).filter { $0.type == .sessionEnded }
        #expect(ended.map { $0.data["reason"] } == ["evicted", "reuse"])
        #expect(ended.allSatisfy { $0.subject == userID })

        let events = try Self.events(world)
        #expect(Set(events.map(\.id)).count == events.count, "one event per change")
        let sequences = events.map(\.sequence)
        #expect(sequences == sequences.sorted(), "commit order")
        // Nothing secret: no token of the responses in any event or record.
        let text = try LocalTable(directory: world.storeDirectory, clock: SystemClock()).changeRecords()
            .compactMap { ItemEvents.event(for: $0, options: ItemEvents.Options(source: "test"))?.json.serialized() }.joined()
        #expect(!text.contains(refreshToken.stringValue ?? "?"))
        #expect(!text.contains("events-1@example.com"))
    }

    @Test func recordsSurviveCheckpointsInOrderAndOnce() throws {
        let directory = TestSupport.temporaryDirectory("change-log")
        defer { TestSupport.removeTree(directory) }
        let table = LocalTable(directory: directory, clock: SystemClock(), schema: .lambdaAuth, checkpointThreshold: 512)
        for round in 0..<40 {
            let key = TableKey(pk: "USER#u\(round % 3)", sk: "SESSION#s\(round)")
            try table.putItem(key.item.merging(["status": .s("ACTIVE"), "pad": .s(String(repeating: "x", count: 100))]) { $1 })
            if round % 7 == 0 { try table.checkpointIfDue() }
        }
        try table.checkpointIfDue()
        let changes = try table.changeRecords()
        #expect(changes.count == 40)
        #expect(changes.map(\.key.sk) == (0..<40).map { "SESSION#s\($0)" })
        #expect(Set(changes.map(\.sequenceNumber)).count == 40)
        // A write that changes nothing is no record, as in DynamoDB Streams.
        let same = TableKey(pk: "USER#u0", sk: "SESSION#s0")
        try table.putItem(try #require(try table.getItem(same)))
        #expect(try table.changeRecords().count == 40)
        // An erasure takes the erased account's records with it.
        try table.putItem(TableKey(pk: "USER#u1", sk: "PROFILE").item)
        try table.deleteItem(TableKey(pk: "USER#u1", sk: "PROFILE"))
        try table.eraseDeletedItems()
        #expect(try table.changeRecords().allSatisfy { $0.key.pk != "USER#u1" })
        #expect(try table.changeRecords().count == 40 - 13)
    }

    /// The log keeps the kinds that publish, cut to what their events read: no refresh or
    /// provider token item, no hash, family key or sealed value, in the records or the file. An
    /// erasure that erases no account (`authctl keys reseal` runs one) keeps a user's unlink.
    @Test func onlyWhatEventsReadIsKeptAndAnUnlinkOutlivesAnotherErasure() throws {
        let directory = TestSupport.temporaryDirectory("change-log-secrets")
        defer { TestSupport.removeTree(directory) }
        let table = LocalTable(directory: directory, clock: SystemClock())
        func put(_ sk: String, _ attributes: Item) throws {
            try table.putItem(TableKey(pk: "USER#u1", sk: sk).item.merging(attributes) { $1 })
        }
        try put("PROFILE", ["email": .s("a@example.com"), "version": .n(1)])
        try put("SESSION#s1", ["status": .s("ACTIVE"), "familyKey": .s("FAMILYKEYVALUE")])
        try put("REFRESH#s1.1", ["status": .s("ACTIVE"), "secretHash": .s("SECRETHASHVALUE")])
        try put("TOKEN#apple", ["subject": .s("000111.a"), "sealedToken": .s("SEALEDTOKENVALUE")])
        try put("IDENTITY#apple", ["subject": .s("000111.a")])
        try put("PROFILE", ["email": .s("a@example.com"), "version": .n(2)])
        // The unlink: the identity and the provider's token go.
        try table.deleteItem(TableKey(pk: "USER#u1", sk: "IDENTITY#apple"))
        try table.deleteItem(TableKey(pk: "USER#u1", sk: "TOKEN#apple"))
        let secrets = ["FAMILYKEYVALUE", "SECRETHASHVALUE", "SEALEDTOKENVALUE"]

        func check(_ when: String) throws {
            let changes = try table.changeRecords()
            // The profile's second write changed only bookkeeping: no record, as no event.
            #expect(changes.map(\.key.sk) == ["PROFILE", "SESSION#s1", "IDENTITY#apple", "IDENTITY#apple"], "\(when)")
            #expect(changes.map(\.kind) == [.insert, .insert, .insert, .remove], "\(when)")
            let types = changes.compactMap { ItemEvents.event(for: $0, options: ItemEvents.Options(source: "test"))?.type }
            #expect(types == [.userCreated, .sessionStarted, .identityLinked, .identityUnlinked], "\(when)")
            let text = changes.map { $0.streamRecord(sourceARN: "test").serialized() }.joined()
            #expect(secrets.filter { text.contains($0) } == [], "\(when)")
            #expect(!text.contains("version"), "\(when): bookkeeping is not kept either")
        }
        try check("read from the log")
        try table.eraseDeletedItems()
        try check("after an erasure of no account")
        let file = String(decoding: try FileSystem.readFile(directory + "/changes"), as: UTF8.self)
        #expect(secrets.filter { file.contains($0) } == [])
        #expect(file.contains("IDENTITY#apple"))
    }
}
