import LambdaAuth
import LambdaAuthTestSupport
import Testing

@Suite struct SessionLimitTests {
    @Test func theSixthSessionRevokesTheLeastRecentlyActiveSessionAndItsTokens() throws {
        let world = FlowWorld(["AUTH_MAX_SESSIONS": "5"])
        var sessions: [String] = []
        var userID = ""
        for minute in 0..<6 {
            let body = world.signIn(token: world.googleToken(subject: "limit-user"))
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
    }
}
