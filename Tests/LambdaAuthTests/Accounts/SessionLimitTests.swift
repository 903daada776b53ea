import LambdaAuth
import LambdaAuthTestSupport
import Testing

@Suite struct SessionLimitTests {
    /// On DynamoDB through a counting proxy: the sign-in that evicts reads the evicted session's
    /// tokens first and revokes them in its one transaction (four requests, one commit).
    @Test(arguments: FlowWorld.Backend.allCases)
    func theSixthSessionRevokesTheLeastRecentlyActiveSessionAndItsTokens(backend: FlowWorld.Backend) throws {
        let proxy = backend == .dynamoDB ? try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint) : nil
        defer { proxy?.stop() }
        var settings = ["AUTH_MAX_SESSIONS": "5"]
        if let proxy { settings["AUTH_DYNAMODB_ENDPOINT"] = proxy.endpoint }
        let world = try FlowWorld(settings, backend: backend)
        var sessions: [String] = []
        var userID = ""
        for minute in 0..<6 {
            let before = proxy?.operations.count ?? 0
            let body = world.signIn(token: world.googleToken(subject: "limit-user"))
            if minute == 5, let proxy {
                #expect(Array(proxy.operations.dropFirst(before)) == ["GetItem", "Query", "Query", "TransactWriteItems"])
                // The evicted family's own items, not every token of the user.
                let prefix = proxy.bodies(of: "Query").last?["ExpressionAttributeValues"]?[":prefix"]?["S"]?.stringValue
                #expect(prefix == "REFRESH#\(sessions[0]).")
            }
            sessions.append(try #require(body["session"]?["id"]?.stringValue))
            userID = try #require(body["user"]?["id"]?.stringValue)
            world.advanceClock(by: 60 * Int64(minute + 1))
        }
        let table = try world.table()
        let statuses = try sessions.map { try table.getItem(TableKey(pk: "USER#\(userID)", sk: "SESSION#\($0)"))?["status"]?.stringValue }
        #expect(statuses == ["REVOKED", "ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE"])
        let tokens = try table.query(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :refresh)",
            attributes: ExpressionAttributes(values: [":pk": .s("USER#\(userID)"), ":refresh": .s("REFRESH#")]))).items
        for token in tokens {
            let expected = token["familyId"]?.stringValue == sessions[0] ? "REVOKED" : "ACTIVE"
            #expect(token["status"]?.stringValue == expected)
        }
        let profile = try #require(try table.getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE")))
        #expect(profile["activeSessions"]?.mapValue?.keys.sorted() == Array(sessions.dropFirst()).sorted())
        #expect(tokens.allSatisfy { $0["familyBorn"] == .bool(true) }, "this release's families say so, rotated or not")
    }

    /// A family an earlier release began may hold tokens named otherwise than by its prefix (the
    /// format-1 ones it moved from, the one it rotated last): its eviction finds and revokes them
    /// all, as before families said where they were born.
    @Test(arguments: FlowWorld.Backend.allCases)
    func anEvictedFamilyAnEarlierReleaseBeganHasEveryTokenRevoked(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(["AUTH_MAX_SESSIONS": "5"], backend: backend)
        let first = try world.inProcess().signIn(idToken: world.googleToken(subject: "earlier-evicted"))
        let userID = try #require(first["user"]?["id"]?.stringValue), sessionID = try #require(first["session"]?["id"]?.stringValue)
        let family = try EarlierReleaseFamily(rewriting: world.table(), userID: userID, sessionID: sessionID)
        try family.addToken("earlier0", secret: [UInt8](repeating: 7, count: 32), createdAt: world.now - 600,
                            expiresAt: world.now + 86_400, usedAt: world.now - 300)
        let active = try family.addToken("earlier1", secret: [UInt8](repeating: 1, count: 32), createdAt: world.now - 600, expiresAt: world.now + 86_400)
        let migrated = try #require(try world.inProcess().refreshAnswer(active).token)
        for minute in 1...5 {
            world.advanceClock(by: 60 * Int64(minute))
            _ = try world.inProcess().signIn(idToken: world.googleToken(subject: "earlier-evicted"))
        }
        let tokens = try world.table().query(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :refresh)",
            attributes: ExpressionAttributes(values: [":pk": .s("USER#\(userID)"), ":refresh": .s("REFRESH#")]))).items
        let evicted = tokens.filter { $0["familyId"]?.stringValue == sessionID }
        #expect(Set(evicted.compactMap { $0["SK"]?.stringValue }) == ["REFRESH#\(sessionID).1", "REFRESH#earlier0", "REFRESH#earlier1"])
        #expect(evicted.allSatisfy { $0["status"]?.stringValue == "REVOKED" }, "\(evicted)")
        #expect(!evicted.contains { $0["familyBorn"] != nil }, "a family an earlier release began never says it was born here")
        #expect(try world.inProcess().refreshAnswer(migrated) == .error("REFRESH_TOKEN_REVOKED"))
    }
}
