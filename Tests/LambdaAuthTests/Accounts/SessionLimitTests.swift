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
    }
}
