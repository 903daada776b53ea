import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Races between real handler processes on one store: the local store, and a DynamoDB table on
/// moto_server with credentials from moto's STS.
@Suite(.serialized) struct FlowConcurrencyTests {
    @Test(arguments: FlowWorld.Backend.allCases)
    func sixteenSimultaneousRefreshesOfOneTokenAllGetTheSameLiveToken(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "race-refresh"))
        let refreshToken = try #require(signedIn["tokens"]?["refreshToken"]?.stringValue)
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let sessionID = try #require(signedIn["session"]?["id"]?.stringValue)

        let processes = try (0..<16).map { _ in try world.start("refresh") }
        let event = JSONValue.object(["refreshToken": .string(refreshToken)]).serializedBytes()
        let outputs = runSimultaneously(16) { processes[$0].finish(stdin: event) }
        outputs.forEach(world.record)

        for output in outputs {
            #expect(output.exitCode == 0)
            #expect(output.errorCode == nil, "refresh answered \(output.stdoutText)")
            #expect(output.responseBody?["session"]?["id"]?.stringValue == sessionID)
        }
        let newTokens = Set(outputs.compactMap { $0.responseBody?["tokens"]?["refreshToken"]?.stringValue })
        #expect(newTokens.count == 1, "one rotation; the others are grace retries that get the same live token")
        #expect(!newTokens.contains(refreshToken))

        let family = try world.table().query(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :refresh)",
            attributes: ExpressionAttributes(values: [":pk": .s("USER#\(userID)"), ":refresh": .s("REFRESH#")]))).items
        let statuses = family.compactMap { $0["status"]?.stringValue }
        #expect(family.count == 2)
        #expect(statuses.filter { $0 == "USED" }.count == 1)
        #expect(statuses.filter { $0 == "ACTIVE" }.count == 1)
        #expect(family.allSatisfy { $0["familyId"]?.stringValue == sessionID })
    }

    /// Eight processes presenting a token two generations old at once: every answer is reuse
    /// or (once one of them revoked the family) revoked, and the family's live token is dead.
    @Test(arguments: FlowWorld.Backend.allCases)
    func eightSimultaneousRefreshesOfAnOldTokenKillTheFamily(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let first = try #require(world.signIn(token: world.googleToken(subject: "race-old"))["tokens"]?["refreshToken"])
        let second = try #require(world.run("refresh", ["refreshToken": first]).responseBody?["tokens"]?["refreshToken"])
        let live = try #require(world.run("refresh", ["refreshToken": second]).responseBody?["tokens"]?["refreshToken"])

        let processes = try (0..<8).map { _ in try world.start("refresh") }
        let event = JSONValue.object(["refreshToken": first]).serializedBytes()
        let outputs = runSimultaneously(8) { processes[$0].finish(stdin: event) }
        outputs.forEach(world.record)
        let codes = outputs.map { $0.errorCode ?? "answered: \($0.stdoutText)" }
        #expect(codes.allSatisfy { $0 == "REFRESH_TOKEN_REUSED" || $0 == "REFRESH_TOKEN_REVOKED" }, "\(codes)")
        #expect(codes.contains("REFRESH_TOKEN_REUSED"))
        #expect(world.run("refresh", ["refreshToken": live]).errorCode == "REFRESH_TOKEN_REVOKED")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func sixteenSimultaneousFirstSignInsCreateOneUser(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let token = world.googleToken(subject: "race-signin", email: "race@example.com")
        let processes = try (0..<16).map { _ in try world.start("signin") }
        let event = JSONValue.object(["provider": "google", "idToken": .string(token)]).serializedBytes()
        let outputs = runSimultaneously(16) { processes[$0].finish(stdin: event) }
        outputs.forEach(world.record)

        let userIDs = outputs.compactMap { $0.responseBody?["user"]?["id"]?.stringValue }
        #expect(userIDs.count == 16, "every sign-in succeeds: \(outputs.filter { $0.errorCode != nil }.prefix(2).map { $0.stdoutText + $0.stderrText.suffix(600) })")
        #expect(Set(userIDs).count == 1)
        #expect(outputs.filter { $0.responseBody?["isNewUser"] == true }.count == 1)

        var profiles = 0
        var page = try world.table().scan(limit: nil, exclusiveStartKey: nil)
        while true {
            profiles += page.items.filter { $0["SK"] == .s("PROFILE") }.count
            guard let next = page.lastEvaluatedKey else { break }
            page = try world.table().scan(limit: nil, exclusiveStartKey: next)
        }
        #expect(profiles == 1)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func eightUsersRacingForOneIdentityOneWins(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let accessTokens = (0..<8).map { index in
            world.signIn(token: world.googleToken(subject: "racer-\(index)", email: "racer\(index)@example.com"))["tokens"]!["accessToken"]!
        }
        let contested = world.appleToken(subject: "000999.contested.1")
        let processes = try (0..<8).map { _ in try world.start("link-provider") }
        let outputs = runSimultaneously(8) { index in
            processes[index].finish(stdin: JSONValue.object([
                "provider": "apple", "idToken": .string(contested), "accessToken": accessTokens[index],
            ]).serializedBytes())
        }
        outputs.forEach(world.record)

        let winners = outputs.filter { $0.errorCode == nil && $0.responseBody?["user"] != nil }
        let losers = outputs.filter { $0.errorCode == "IDENTITY_LINKED_TO_OTHER_USER" }
        #expect(winners.count == 1, "\(outputs.map(\.stdoutText))")
        #expect(losers.count == 7)
        let link = try world.table().getItem(TableKey(pk: "IDENTITY#apple#000999.contested.1", sk: "LINK"))
        #expect(link?["userId"] == winners.first?.responseBody?["user"]?["id"].map { .s($0.stringValue ?? "") })
    }
}

/// Sign-ins racing the deletion of their own user (contract sections 7 and 13): each answers with
/// the old user (the deletion had not started) or a new one, never STORE_UNAVAILABLE. Real
/// processes on the local store; a few short rounds keep it quick.
@Suite(.serialized) struct SignInDeletionRaceTests {
    @Test func signInsRacingDeleteAccountAlwaysSignIn() throws {
        let world = FlowWorld()
        let token = world.googleToken(subject: "race-deletion", email: "race-deletion@example.com")
        let signInEvent = JSONValue.object(["provider": "google", "idToken": .string(token)]).serializedBytes()
        var current = world.signIn(token: token)
        var deletions = 0
        for _ in 0..<8 {
            let userID = try #require(current["user"]?["id"]?.stringValue)
            let accessToken = try #require(current["tokens"]?["accessToken"])
            let deleteEvent = JSONValue.object(["accessToken": accessToken]).serializedBytes()
            let processes = try [world.start("delete-account")] + (0..<3).map { _ in try world.start("signin") }
            let outputs = runSimultaneously(processes.count) { processes[$0].finish(stdin: $0 == 0 ? deleteEvent : signInEvent) }
            outputs.forEach(world.record)
            #expect(outputs[0].responseBody?["deleted"] == true, "\(outputs[0].stdoutText)")
            if outputs[0].responseBody?["deleted"] == true { deletions += 1 }
            for output in outputs.dropFirst() {
                #expect(output.errorCode == nil, "sign-in answered \(output.stdoutText)")
            }
            // A sign-in that reached the old user opened its session before the deletion took it.
            let signedIn = outputs.dropFirst().compactMap { $0.responseBody?["user"]?["id"]?.stringValue }
            #expect(signedIn.filter { $0 != userID }.count <= 3 && Set(signedIn.filter { $0 != userID }).count <= 1,
                    "the new users are one user")
            current = world.signIn(token: token)
            #expect(current["user"]?["id"]?.stringValue != userID, "the deleted user never comes back")
        }
        #expect(deletions == 8)
    }
}
