import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Testing

/// Guests (contract section 9) on both backends: creation and its rate limit, the upgrade by a
/// first identity (and its races), deletion without re-authentication, expiry and pruning.
@Suite(.serialized) struct GuestTests {
    static let guestEnvironment = ["AUTH_GUEST": "on", "AUTH_GUEST_RATE": "30"]
    static let context = InvocationContext(requestID: "guest-test", logger: Logger.jsonLines(level: .error))

    /// A sign-in as an HTTP API event from `sourceIP`, or a direct invocation (nil).
    static func guestSignIn(_ flows: InProcessFlows, sourceIP: String?, device: JSONValue? = nil) -> Result<JSONValue, AuthError> {
        var body: [String: JSONValue] = ["provider": "guest"]
        if let device { body["device"] = device }
        let request = InvocationRequest(kind: sourceIP == nil ? .direct : .httpAPIv2, body: body, sourceIP: sourceIP)
        do {
            return .success(try flows.handler(HandlerCatalogue.signin).handle(request, context: context).body)
        } catch {
            return .failure(AuthError.from(error))
        }
    }

    static func claims(_ accessToken: JSONValue?) throws -> JSONValue {
        .object(try JSONWebToken(parsing: try #require(accessToken?.stringValue)).claims)
    }

    /// A world with guests on, its in-process flows, and one guest signed in directly.
    static func guestWorld(_ backend: FlowWorld.Backend, _ extra: [String: String] = [:]) throws
        -> (world: FlowWorld, flows: InProcessFlows, guest: JSONValue, userID: String) {
        let world = try FlowWorld(guestEnvironment.merging(extra) { $1 }, backend: backend)
        let flows = try InProcessFlows(world)
        let guest = try guestSignIn(flows, sourceIP: nil).get()
        return (world, flows, guest, try #require(guest["user"]?["id"]?.stringValue))
    }

    static func userItems(_ items: [Item], _ userID: String) -> [Item] {
        items.filter { $0["PK"] == .s("USER#\(userID)") }
    }

    // MARK: - Sign-in

    @Test func guestsAreOffByDefault() throws {
        let flows = try InProcessFlows(FlowWorld())
        guard case .failure(let error) = Self.guestSignIn(flows, sourceIP: nil) else {
            Issue.record("a guest sign-in succeeded with AUTH_GUEST unset")
            return
        }
        #expect(error.code == .providerNotConfigured)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aGuestGetsTokensCredentialsAndAnAnonymousAccessToken(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.guestEnvironment, backend: backend)
        let flows = try InProcessFlows(world)
        let body = try Self.guestSignIn(flows, sourceIP: "203.0.113.5", device: ["id": "d-1", "platform": "ios"]).get()
        let user = try #require(body["user"])
        let userID = try #require(user["id"]?.stringValue)
        #expect(user["isGuest"] == true)
        #expect(user["identities"] == .array([]))
        #expect(user["email"] == .null)
        #expect(body["isNewUser"] == true)
        #expect(body["credentials"]?["accessKeyId"]?.stringValue?.hasPrefix("ASIA") == true)
        let claims = try Self.claims(body["tokens"]?["accessToken"])
        #expect(claims["is_anonymous"] == true)
        #expect(claims["sub"]?.stringValue == userID)

        let refreshed = try flows.refresh(try #require(body["tokens"]?["refreshToken"]?.stringValue))
        #expect(refreshed["user"]?["isGuest"] == true)
        #expect(try Self.claims(refreshed["tokens"]?["accessToken"])["is_anonymous"] == true)

        // A full user's object and token are as they always were.
        let full = try flows.signIn(idToken: world.googleToken(subject: "full-user"))
        #expect(full["user"]?["isGuest"] == nil)
        #expect(try Self.claims(full["tokens"]?["accessToken"])["is_anonymous"] == nil)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aGuestSignInCostsACountedSlotAndOneTransaction(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.guestEnvironment, backend: backend)
        let flows = try InProcessFlows(world)
        _ = try Self.guestSignIn(flows, sourceIP: "203.0.113.3").get()  // warms the keys
        _ = flows.table.takeOperations()
        _ = try Self.guestSignIn(flows, sourceIP: "203.0.113.3").get()
        #expect(flows.table.takeOperations() == ["GetItem", "PutItem", "TransactWriteItems"], "the rolling-hour counter: read, conditional put")
        _ = try Self.guestSignIn(flows, sourceIP: nil).get()
        #expect(flows.table.takeOperations() == ["TransactWriteItems"], "a direct invocation is not counted")
    }

    // MARK: - Rate limit

    @Test(arguments: FlowWorld.Backend.allCases)
    func aHundredGuestSignInsFromOneIPGiveExactlyThirty(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.guestEnvironment, backend: backend)
        let flows = try InProcessFlows(world)
        let outcomes = (0..<100).map { _ in Self.guestSignIn(flows, sourceIP: "203.0.113.10") }
        let successes = outcomes.filter { if case .success = $0 { return true } else { return false } }
        #expect(successes.count == 30)
        for case .failure(let error) in outcomes {
            #expect(error.code == .rateLimited)
            // Counted in the current five-minute slot, which leaves the rolling hour after 3600 + 300 s.
            #expect(error.retryAfter == 3900 - world.now % 300)
        }
        // Another address has its own count; direct invocations are not limited.
        #expect((try? Self.guestSignIn(flows, sourceIP: "198.51.100.20").get()) != nil)
        let direct = (0..<35).map { _ in Self.guestSignIn(flows, sourceIP: nil) }
        #expect(direct.allSatisfy { if case .success = $0 { return true } else { return false } })
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func eightRacingProcessesStillGiveExactlyThirty(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.guestEnvironment, backend: backend)
        let event = JSONValue.object([
            "version": "2.0", "routeKey": "POST /auth/signin", "rawPath": "/auth/signin",
            "headers": ["content-type": "application/json"],
            "requestContext": ["http": ["method": "POST", "path": "/auth/signin", "sourceIp": "203.0.113.77"]],
            "body": .string(JSONValue.object(["provider": "guest"]).serialized()), "isBase64Encoded": false,
        ]).serializedBytes()
        var outputs: [ProcessRunner.Output] = []
        var remaining = 100
        while remaining > 0 {
            let count = min(8, remaining)
            let processes = try (0..<count).map { _ in try world.start("signin") }
            outputs += runSimultaneously(count) { processes[$0].finish(stdin: event) }
            remaining -= count
        }
        outputs.forEach(world.record)
        #expect(outputs.allSatisfy { $0.exitCode == 0 })
        let statuses = outputs.compactMap { $0.json?["statusCode"]?.int64Value }
        #expect(statuses.filter { $0 == 200 }.count == 30, "\(outputs.filter { $0.errorCode != nil && $0.errorCode != "RATE_LIMITED" }.prefix(2).map(\.stdoutText))")
        #expect(statuses.filter { $0 == 429 }.count == 70)
        let refused = try #require(outputs.first { $0.errorCode == "RATE_LIMITED" })
        let retryAfter = try #require(refused.responseBody?["error"]?["retryAfter"]?.int64Value)
        #expect(retryAfter > 3600 && retryAfter <= 3900)
        #expect(refused.json?["headers"]?["retry-after"]?.stringValue == String(retryAfter))
        #expect(refused.responseBody?["error"]?["retryable"] == true)
    }

    // MARK: - Upgrade

    @Test(arguments: FlowWorld.Backend.allCases)
    func linkingAFirstIdentityKeepsTheUserAndItsSessions(backend: FlowWorld.Backend) throws {
        let (world, flows, guest, userID) = try Self.guestWorld(backend)
        let sessionID = try #require(guest["session"]?["id"]?.stringValue)
        let accessToken = try #require(guest["tokens"]?["accessToken"])
        let refreshToken = try #require(guest["tokens"]?["refreshToken"]?.stringValue)

        _ = flows.table.takeOperations()
        let linked = try flows.linkProvider(["accessToken": accessToken, "provider": "google",
                                             "idToken": .string(world.googleToken(subject: "upgrade-1", email: "up@example.com"))])
        let operations = flows.table.takeOperations()
        #expect(operations.filter { $0 == "TransactWriteItems" }.count == 1, "the upgrade only: \(operations)")
        #expect(operations.suffix(2) == ["UpdateItem", "UpdateItem"], "the session's and the token's full-user ttl: \(operations)")
        #expect(linked["user"]?["id"]?.stringValue == userID)
        #expect(linked["user"]?["isGuest"] == nil)
        #expect(linked["user"]?["email"]?.stringValue == "up@example.com")
        #expect(linked["user"]?["identities"]?.arrayValue?.count == 1)

        // The guest's session goes on as the full user's: no expiry of a guest left anywhere.
        let refreshed = try flows.refresh(refreshToken)
        #expect(refreshed["session"]?["id"]?.stringValue == sessionID)
        #expect(refreshed["user"]?["isGuest"] == nil)
        #expect(try Self.claims(refreshed["tokens"]?["accessToken"])["is_anonymous"] == nil)
        let profile = try #require(try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE")))
        #expect(profile["ttl"] == nil && profile["isGuest"] == nil)

        // Signing in with that Google account later lands on the same user; unlinking it cannot
        // make a guest again.
        let later = try flows.signIn(idToken: world.googleToken(subject: "upgrade-1", email: "up@example.com"))
        #expect(later["user"]?["id"]?.stringValue == userID)
        #expect(InProcessFlowTests.code { () throws(AuthError) in
            try flows.linkProvider(["accessToken": later["tokens"]!["accessToken"]!, "action": "unlink", "provider": "google"])
        } == "LAST_IDENTITY")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func anIdentityOfSomeoneElseLeavesTheGuestAsItWas(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.guestEnvironment, backend: backend)
        let flows = try InProcessFlows(world)
        let owner = try flows.signIn(idToken: world.googleToken(subject: "taken-1", email: "owner@example.com"))
        let guest = try Self.guestSignIn(flows, sourceIP: nil).get()
        let userID = try #require(guest["user"]?["id"]?.stringValue)
        let before = Self.userItems(try world.allItems(), userID)

        #expect(InProcessFlowTests.code { () throws(AuthError) in
            try flows.linkProvider(["accessToken": guest["tokens"]!["accessToken"]!, "provider": "google",
                                    "idToken": .string(world.googleToken(subject: "taken-1", email: "owner@example.com"))])
        } == "IDENTITY_LINKED_TO_OTHER_USER")
        #expect(Self.userItems(try world.allItems(), userID) == before)
        let link = try world.table().getItem(TableKey(pk: "IDENTITY#google#taken-1", sk: "LINK"))
        #expect(link?["userId"] == owner["user"]?["id"]?.stringValue.map(AttributeValue.s))
        #expect(try flows.refresh(guest["tokens"]!["refreshToken"]!.stringValue!)["user"]?["isGuest"] == true)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func twoSimultaneousUpgradesOfOneGuestOneWins(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.guestEnvironment, backend: backend)
        let guest = world.run("signin", ["provider": "guest"]).responseBody
        let userID = try #require(guest?["user"]?["id"]?.stringValue)
        let accessToken = try #require(guest?["tokens"]?["accessToken"])
        let subjects = ["race-upgrade-a", "race-upgrade-b"]
        let processes = try subjects.map { _ in try world.start("link-provider") }
        let outputs = runSimultaneously(2) { index in
            processes[index].finish(stdin: JSONValue.object([
                "provider": "google", "accessToken": accessToken,
                "idToken": .string(world.googleToken(subject: subjects[index], email: "\(subjects[index])@example.com")),
            ]).serializedBytes())
        }
        outputs.forEach(world.record)

        let winners = outputs.indices.filter { outputs[$0].errorCode == nil }
        #expect(winners.count == 1, "\(outputs.map(\.stdoutText))")
        let loser = outputs.indices.first { !winners.contains($0) }
        #expect(loser.map { ["PROVIDER_ALREADY_LINKED", "IDENTITY_LINKED_TO_OTHER_USER"].contains(outputs[$0].errorCode ?? "") } == true,
                "\(outputs.map(\.stdoutText))")
        let table = try world.table()
        for index in subjects.indices {
            let link = try table.getItem(TableKey(pk: "IDENTITY#google#\(subjects[index])", sk: "LINK"))
            if winners.contains(index) {
                #expect(link?["userId"] == .s(userID))
            } else {
                #expect(link == nil, "the loser's identity is linked to no one")
            }
        }
        let identities = Self.userItems(try world.allItems(), userID).filter { $0["SK"]?.stringValue?.hasPrefix("IDENTITY#") == true }
        #expect(identities.count == 1)
    }

    // MARK: - Deletion

    @Test(arguments: FlowWorld.Backend.allCases)
    func aGuestDeletesItsAccountWithoutReauthentication(backend: FlowWorld.Backend) throws {
        let (world, _, guest, userID) = try Self.guestWorld(backend)
        world.advanceClock(by: 600)  // past AUTH_REAUTH_WINDOW
        let flows = try InProcessFlows(world)
        let deleted = try flows.deleteAccount(["accessToken": guest["tokens"]!["accessToken"]!])
        #expect(deleted["deleted"] == true)
        #expect(Self.userItems(try world.allItems(at: 0), userID).isEmpty)
    }

    // MARK: - Expiry

    @Test(arguments: FlowWorld.Backend.allCases)
    func aRefreshMovesTheExpiryForwardAndAnInactiveGuestVanishes(backend: FlowWorld.Backend) throws {
        let (world, _, guest, userID) = try Self.guestWorld(backend, ["AUTH_GUEST_TTL": "86400"])
        let start = world.now
        for item in Self.userItems(try world.allItems(), userID) {
            #expect((item["ttl"]?.int64Value ?? .max) <= start + 86400, "every item of a guest vanishes with it: \(item)")
        }

        world.advanceClock(by: 80_000)
        let refreshed = try InProcessFlows(world).refresh(try #require(guest["tokens"]?["refreshToken"]?.stringValue))
        let profile = try #require(try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE")))
        #expect(profile["ttl"] == .n(start + 80_000 + 86400))
        let items = Self.userItems(try world.allItems(), userID)
        #expect(items.allSatisfy { ($0["ttl"]?.int64Value ?? .max) <= start + 80_000 + 86400 })

        world.advanceClock(by: 80_000)  // past the first expiry, within the moved one
        let again = try InProcessFlows(world).refresh(try #require(refreshed["tokens"]?["refreshToken"]?.stringValue))
        #expect(again["user"]?["id"]?.stringValue == userID)

        world.advanceClock(by: 86_401)  // inactive for AUTH_GUEST_TTL: nothing of it is visible
        #expect(Self.userItems(try world.allItems(), userID).isEmpty)
        let late = try InProcessFlows(world)
        #expect(InProcessFlowTests.code { () throws(AuthError) in try late.refresh(again["tokens"]!["refreshToken"]!.stringValue!) }
                == "REFRESH_TOKEN_NOT_FOUND")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func pruneGuestsLeavesNoItemOfAnExpiredGuest(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.guestEnvironment.merging(["AUTH_GUEST_TTL": "86400"]) { $1 }, backend: backend)
        let flows = try InProcessFlows(world)
        let expired = try Self.guestSignIn(flows, sourceIP: "203.0.113.1").get()
        let expiredID = try #require(expired["user"]?["id"]?.stringValue)
        // A guest that signs out near its end leaves a REVOKED session and token that outlive its
        // profile by up to a day: leftovers the pruning removes too.
        let signedOut = try Self.guestSignIn(flows, sourceIP: nil).get()
        let signedOutID = try #require(signedOut["user"]?["id"]?.stringValue)
        let full = try flows.signIn(idToken: world.googleToken(subject: "stays"))
        let fullID = try #require(full["user"]?["id"]?.stringValue)
        world.advanceClock(by: 86_000)
        _ = try InProcessFlows(world).signOut(["refreshToken": signedOut["tokens"]!["refreshToken"]!])
        let live = try Self.guestSignIn(try InProcessFlows(world), sourceIP: nil).get()
        let liveID = try #require(live["user"]?["id"]?.stringValue)
        world.advanceClock(by: 4000)

        #expect(Self.userItems(try world.allItems(), expiredID).isEmpty, "expired: invisible")
        #expect(!Self.userItems(try world.allItems(at: 0), expiredID).isEmpty, "but still stored")

        let prune = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["users", "prune-guests"],
                                          environment: world.environment)
        #expect(prune.exitCode == 0, "\(prune.stderrText)")
        let report = try #require(prune.json)
        // The signed-out guest is a leftover partition once its profile was dropped from disk, an
        // expired guest while the profile is still stored.
        let pruned = (report["expiredGuests"]?.int64Value ?? 0) + (report["leftoverPartitions"]?.int64Value ?? 0)
        #expect(pruned == 2, "\(report)")

        let stored = try world.allItems(at: 0)
        #expect(Self.userItems(stored, expiredID).isEmpty)
        #expect(Self.userItems(stored, signedOutID).isEmpty)
        #expect(!stored.contains { $0["PK"]?.stringValue?.hasPrefix("RATE#") == true }, "the expired counter went too")
        #expect(!Self.userItems(stored, fullID).isEmpty)
        #expect(!Self.userItems(stored, liveID).isEmpty)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aRefreshWhoseProfileVanishedIsRevokedNotAnError(backend: FlowWorld.Backend) throws {
        let (world, flows, guest, userID) = try Self.guestWorld(backend)
        try world.table().deleteItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE"))
        #expect(InProcessFlowTests.code { () throws(AuthError) in try flows.refresh(guest["tokens"]!["refreshToken"]!.stringValue!) }
                == "REFRESH_TOKEN_REVOKED")
        #expect(try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE")) == nil, "nothing brought it back")
    }
}
