import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// A user's app metadata (contract section 17): set only by operators (`authctl users
/// set-metadata`), validated, conditional on the profile version, shown in the user object, and
/// carried as `app_metadata` by every access token issued afterwards: the next sign-in and each
/// session's next refresh. Both backends.
@Suite struct AppMetadataTests {
    static func authctl(_ world: FlowWorld, _ arguments: String...) throws -> ProcessRunner.Output {
        try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: world.environment)
    }

    /// The access token's payload.
    static func claims(_ token: JSONValue?) throws -> JSONValue {
        let text = try #require(token?.stringValue)
        return try JSONValue.parse(try #require(Base64.urlDecoded(text.split(separator: ".")[1])))
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func tokensIssuedAfterAnOperatorsChangeCarryIt(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let token = world.googleToken(subject: "metadata-user", email: "metadata@example.com")
        let signedIn = world.signIn(token: token)
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        #expect(signedIn["user"]?["appMetadata"] == nil, "a user without metadata has no field")
        #expect(try Self.claims(signedIn["tokens"]?["accessToken"])["app_metadata"] == nil)
        var refreshToken = try #require(signedIn["tokens"]?["refreshToken"])

        let set = try Self.authctl(world, "users", "set-metadata", userID, #"{"role":"admin","plan":{"name":"pro","seats":5}}"#)
        try #require(set.exitCode == 0, "\(set.stdoutText) \(set.stderrText)")
        let metadata: JSONValue = ["role": "admin", "plan": ["name": "pro", "seats": 5]]
        #expect(set.json?["user"]?["appMetadata"] == metadata)
        #expect(try Self.authctl(world, "users", "show", userID).json?["user"]?["appMetadata"] == metadata)

        // The session that was open carries it from its next refresh on.
        let refreshed = world.run("refresh", ["refreshToken": refreshToken])
        #expect(try Self.claims(refreshed.responseBody?["tokens"]?["accessToken"])["app_metadata"] == metadata, "\(refreshed.stdoutText)")
        #expect(refreshed.responseBody?["user"]?["appMetadata"] == metadata)
        refreshToken = try #require(refreshed.responseBody?["tokens"]?["refreshToken"])
        // A new sign-in carries it.
        let again = world.signIn(token: token)
        #expect(try Self.claims(again["tokens"]?["accessToken"])["app_metadata"] == metadata)
        #expect(again["user"]?["appMetadata"] == metadata)

        // `{}` clears it; the next refresh carries none.
        #expect(try Self.authctl(world, "users", "set-metadata", userID, "{}").exitCode == 0)
        let cleared = world.run("refresh", ["refreshToken": refreshToken])
        #expect(try Self.claims(cleared.responseBody?["tokens"]?["accessToken"])["app_metadata"] == nil, "\(cleared.stdoutText)")
        #expect(cleared.responseBody?["user"]?["appMetadata"] == nil)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func badMetadataAndUnknownUsersChangeNothing(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "metadata-refused"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let before = try world.allItems(at: 0)
        let tooLarge = "{\"note\":\"" + String(repeating: "x", count: 2_040) + "\"}"
        for (value, message) in [("[1, 2]", "must be a JSON object"), ("\"admin\"", "must be a JSON object"),
                                 ("{\"role\":", "must be a JSON object"), (tooLarge, "at most 2048 are allowed")] {
            let refused = try Self.authctl(world, "users", "set-metadata", userID, value)
            #expect(refused.exitCode != 0 && refused.stderrText.contains(message), "\(value.prefix(20)): \(refused.stderrText)")
        }
        let unknown = try Self.authctl(world, "users", "set-metadata", "no-such-user", "{}")
        #expect(unknown.exitCode != 0 && unknown.stderrText.contains("no user no-such-user"))
        let after = try world.allItems(at: 0)
        #expect(after == before, "a refused change wrote something")
        // Exactly at the limit is accepted.
        let exact = "{\"note\":\"" + String(repeating: "x", count: AppMetadata.maximumBytes - 11) + "\"}"
        #expect(try Self.authctl(world, "users", "set-metadata", userID, exact).exitCode == 0)
    }

    /// The next refresh carries a change with no extra request: the operator's change moves the
    /// live tokens' copies of the user too.
    @Test func theNextRefreshOnDynamoDBStillTakesTwoRequests() throws {
        let proxy = try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint)
        defer { proxy.stop() }
        let world = try FlowWorld(["AUTH_DYNAMODB_ENDPOINT": proxy.endpoint], backend: .dynamoDB)
        let signedIn = world.signIn(token: world.googleToken(subject: "metadata-counted"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        #expect(try Self.authctl(world, "users", "set-metadata", userID, #"{"plan":"team"}"#).exitCode == 0)
        let before = proxy.operations.count
        let refreshed = world.run("refresh", ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])])
        #expect(try Self.claims(refreshed.responseBody?["tokens"]?["accessToken"])["app_metadata"] == ["plan": "team"])
        #expect(Array(proxy.operations.dropFirst(before)) == ["GetItem", "TransactWriteItems"])
    }
}
