@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `delete-account` (contract section 7): re-authentication, every item gone, a new user on the
/// next sign-in, and a deletion killed at any instant finished by the next request.
@Suite(.serialized) struct AccountDeletionTests {
    /// No item of the user: its partition is empty, its links and email claims are gone, and
    /// (`fullScan`, as `authctl store export` would show it) no item anywhere mentions its id,
    /// and no link or email claim points at a user without a profile.
    static func expectNoTrace(of userID: String, links: [TableKey], emails: [String], in world: FlowWorld, fullScan: Bool = true,
                              _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws {
        let table = try world.table()
        let partition = try table.query(QueryRequest(keyCondition: "PK = :pk", attributes: ExpressionAttributes(values: [":pk": .s("USER#\(userID)")])))
        #expect(partition.items.isEmpty, "\(comment): \(partition.items.count) items of the user remain", sourceLocation: sourceLocation)
        for key in links + emails.map({ TableKey(pk: "EMAIL#\($0)", sk: "USER") }) {
            #expect(try table.getItem(key)?["userId"]?.stringValue != userID, "\(comment): \(key.pk) still points at the user",
                    sourceLocation: sourceLocation)
        }
        guard fullScan else { return }
        // The revocation list's entry (contract section 20) names the user until no access token
        // of theirs can be valid; nothing else may.
        let items = try world.allItems().filter { !($0["PK"]?.stringValue ?? "").hasPrefix("REVOKED#") }
        #expect(!items.contains { DynamoJSON.encode($0).serialized().contains(userID) }, "\(comment): items of \(userID) remain",
                sourceLocation: sourceLocation)
        let profiles = Set(items.filter { $0["SK"] == .s("PROFILE") }.compactMap { $0["PK"]?.stringValue })
        for item in items where item["SK"] == .s("LINK") || item["SK"] == .s("USER") {
            #expect(profiles.contains("USER#" + (item["userId"]?.stringValue ?? "?")), "\(comment): \(item["PK"]!) points at a missing user",
                    sourceLocation: sourceLocation)
        }
    }

    /// Gives the user `count` more items than a transaction holds: used refresh tokens of its session.
    static func addItems(_ count: Int, userID: String, sessionID: String, world: FlowWorld) throws {
        let table = try world.table()
        let items: [Item] = (0..<count).map { index in
            ["PK": .s("USER#\(userID)"), "SK": .s("REFRESH#filler\(index)"), "GSI1PK": .s("REFRESH#filler\(userID)\(index)"),
             "GSI1SK": .s("REFRESH"), "familyId": .s(sessionID), "userId": .s(userID), "status": .s("USED"),
             "createdAt": .s(ISO8601.format(epochSeconds: world.now)), "expiresAt": .s(ISO8601.format(epochSeconds: world.now + 3600)),
             "ttl": .n(world.now + 7200)]
        }
        // Small batches: moto copies the table for every transaction, which is slow on a busy machine.
        var start = 0
        while start < items.count {
            try table.transactWrite(items[start..<min(items.count, start + 25)].map { .put($0) })
            start += 25
        }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aStaleSessionNeedsAFreshIDTokenOfItsOwnIdentity(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let token = world.googleToken(subject: "leaver", email: "leaver@example.com")
        let signedIn = world.signIn(token: token)
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let accessToken = try #require(signedIn["tokens"]?["accessToken"])
        let refreshToken = try #require(signedIn["tokens"]?["refreshToken"])
        let stranger = world.googleToken(subject: "someone-else", email: "else@example.com")
        world.signIn(token: stranger)
        world.advanceClock(by: 400)

        let before = backend == .local ? world.storeSnapshot() : [:]
        let bare = world.run("delete-account", ["accessToken": accessToken])
        #expect(bare.errorCode == "REAUTHENTICATION_REQUIRED", "\(bare.stdoutText)")
        #expect(bare.responseBody?["error"]?["status"]?.int64Value == 401)
        let wrong = world.run("delete-account", ["accessToken": accessToken, "provider": "google", "idToken": .string(stranger)])
        #expect(wrong.errorCode == "REAUTHENTICATION_REQUIRED", "\(wrong.stdoutText)")
        if backend == .local { #expect(world.storeSnapshot() == before, "refused deletions change nothing") }

        // The sign-in's own ID token is 400 s old by now: the proof must be issued within the window.
        let fresh = world.googleToken(subject: "leaver", email: "leaver@example.com", changes: ["iat": .number(world.now)])
        let deleted = world.run("delete-account", ["accessToken": accessToken, "provider": "google", "idToken": .string(fresh)])
        #expect(deleted.responseBody == ["deleted": true, "userId": .string(userID)], "\(deleted.stdoutText)")
        try Self.expectNoTrace(of: userID, links: [TableKey(pk: "IDENTITY#google#leaver", sk: "LINK")], emails: ["leaver@example.com"], in: world)
        let refresh = world.run("refresh", ["refreshToken": refreshToken])
        #expect(["REFRESH_TOKEN_NOT_FOUND", "REFRESH_TOKEN_REVOKED"].contains(refresh.errorCode ?? ""), "\(refresh.stdoutText)")
        #expect(world.run("sessions", ["accessToken": accessToken]).errorCode == "ACCESS_TOKEN_REVOKED")

        let again = world.signIn(token: token)
        #expect(again["isNewUser"] == true)
        #expect(again["user"]?["id"]?.stringValue != userID, "the same identity becomes a new user")
        for line in world.logs.joined(separator: "\n").split(separator: "\n") {
            #expect(!line.contains(token) && !line.contains(fresh) && !line.contains(accessToken.stringValue ?? "?"), "a token in a log line")
        }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aFreshSessionDeletesAnAccountLargerThanATransaction(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "big-account", email: "big@example.com"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let sessionID = try #require(signedIn["session"]?["id"]?.stringValue)
        let linked = world.run("link-provider", ["provider": "apple", "idToken": .string(world.appleToken(subject: "000123.big.1")),
                                                 "accessToken": try #require(signedIn["tokens"]?["accessToken"])])
        #expect(linked.errorCode == nil, "\(linked.stdoutText)")
        try Self.addItems(250, userID: userID, sessionID: sessionID, world: world)

        let deleted = world.run("delete-account", ["accessToken": try #require(signedIn["tokens"]?["accessToken"])])
        #expect(deleted.responseBody?["deleted"] == true, "\(deleted.stdoutText)")
        try Self.expectNoTrace(of: userID, links: [TableKey(pk: "IDENTITY#google#big-account", sk: "LINK"),
                                                   TableKey(pk: "IDENTITY#apple#000123.big.1", sk: "LINK")],
                               emails: ["big@example.com"], in: world)
        #expect(world.signIn(.apple, token: world.appleToken(subject: "000123.big.1"))["isNewUser"] == true)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func operatorsShowAndDeleteAUserWithTheSameDeletion(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "operated", email: "operated@example.com"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let authctl = ProcessRunner.executable("authctl")

        let shown = try ProcessRunner.run(authctl, arguments: ["users", "show", userID], environment: world.environment)
        #expect(shown.exitCode == 0, "\(shown.stderrText)")
        let description = try #require(shown.json, "\(shown.stdoutText)")
        #expect(description["user"]?["id"]?.stringValue == userID)
        #expect(description["sessions"]?.arrayValue?.count == 1)
        #expect(description["refreshTokens"]?["ACTIVE"]?.int64Value == 1)
        #expect(!shown.stdoutText.contains(try #require(signedIn["tokens"]?["refreshToken"]?.stringValue)), "never a token")

        let deleted = try ProcessRunner.run(authctl, arguments: ["users", "delete", userID], environment: world.environment)
        #expect(deleted.exitCode == 0, "\(deleted.stderrText)")
        #expect(deleted.json == ["deleted": true, "userId": .string(userID)])
        try Self.expectNoTrace(of: userID, links: [TableKey(pk: "IDENTITY#google#operated", sk: "LINK")], emails: ["operated@example.com"],
                               in: world)
        let missing = try ProcessRunner.run(authctl, arguments: ["users", "show", userID], environment: world.environment)
        #expect(missing.exitCode == 1 && missing.stderrText.contains("no user \(userID)"))
        let again = try ProcessRunner.run(authctl, arguments: ["users", "delete", userID], environment: world.environment)
        #expect(again.exitCode == 1)
    }

    /// Killed with SIGKILL at random instants of a deletion of 150 to 300 items (more than a transaction holds): the next delete-account
    /// (or, every other time, a sign-in with the identity) finishes it.
    @Test(arguments: [(FlowWorld.Backend.local, 20), (FlowWorld.Backend.dynamoDB, 4)])
    func aDeletionKilledAtAnyInstantIsFinishedByTheNextRequest(backend: FlowWorld.Backend, instants: Int) throws {
        var generator = SystemRandomNumberGenerator()
        var finishedBySignIn = 0
        var states: [String: Int] = [:]
        // How long a whole delete-account process takes here, so that the kills spread over it
        // (start-up, the mark, the batches, the last transaction) on a fast or a busy machine.
        let calibration = try FlowWorld(backend: backend)
        let calibrated = calibration.signIn(token: calibration.googleToken(subject: "calibration"))
        try Self.addItems(backend == .local ? 300 : 150, userID: try #require(calibrated["user"]?["id"]?.stringValue),
                          sessionID: try #require(calibrated["session"]?["id"]?.stringValue), world: calibration)
        let started = SystemClock().now()
        #expect(calibration.run("delete-account", ["accessToken": try #require(calibrated["tokens"]?["accessToken"])]).responseBody?["deleted"] == true)
        let wholeDeletion = UInt32((SystemClock().now() - started) * 1_200_000)
        for instant in 0..<instants {
            let world = try FlowWorld(backend: backend)
            let token = world.googleToken(subject: "killed-\(instant)", email: "killed\(instant)@example.com")
            let signedIn = world.signIn(token: token)
            let userID = try #require(signedIn["user"]?["id"]?.stringValue)
            let accessToken = try #require(signedIn["tokens"]?["accessToken"])
            try Self.addItems(backend == .local ? 300 : 150, userID: userID, sessionID: try #require(signedIn["session"]?["id"]?.stringValue), world: world)

            let process = try world.start("delete-account")
            let event = JSONValue.object(["accessToken": accessToken]).serializedBytes()
            let delay = UInt32.random(in: 0...wholeDeletion, using: &generator)
            _ = runSimultaneously(2) { index -> Int in
                if index == 0 {
                    _ = process.finish(stdin: event)
                } else {
                    usleep(delay)
                    process.kill(SIGKILL)
                }
                return 0
            }
            let profile = try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE"))
            states[profile == nil ? "finished" : profile?["deletionRequestedAt"] == nil ? "not begun" : "interrupted", default: 0] += 1
            if instant % 2 == 0 {
                let second = world.run("delete-account", ["accessToken": accessToken])
                #expect(second.responseBody?["deleted"] == true || second.errorCode == "ACCESS_TOKEN_REVOKED",
                        "after a kill at \(delay) µs: \(second.stdoutText)")
            } else {
                let again = world.signIn(token: token)
                if again["user"]?["id"]?.stringValue != userID { finishedBySignIn += 1 }
                // Either the kill came before the mark (the account is whole: same user) or the
                // sign-in finished the deletion and made a new user.
                if again["user"]?["id"]?.stringValue == userID {
                    let second = world.run("delete-account", ["accessToken": accessToken])
                    #expect(second.responseBody?["deleted"] == true, "\(second.stdoutText)")
                }
            }
            // The whole store once per backend; the user's own keys every time.
            try Self.expectNoTrace(of: userID, links: [TableKey(pk: "IDENTITY#google#killed-\(instant)", sk: "LINK")],
                                   emails: ["killed\(instant)@example.com"], in: world, fullScan: instant == 0, "kill at \(delay) µs")
        }
        // Where the kills landed (random: informative, the assertions above hold for each).
        print("\(backend): kills landed \(states.sorted { $0.key < $1.key }); sign-ins that finished a deletion: \(finishedBySignIn)")
    }

    /// The operators', Apple's and the guest pruning's deletion decides on the profile it reads
    /// itself: one its predicate refuses is left as it was, whatever the caller saw before.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aDeletionWithoutCallerLeavesAUserItsPredicateRefuses(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let flows = try InProcessFlows(world)
        let signedIn = try flows.signIn(idToken: world.googleToken(subject: "kept", email: "kept@example.com"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let before = try world.allItems()
        let deletion = flows.services.deletion
        let logger = Logger.jsonLines(level: .error)

        var decidedOn: [String] = []
        #expect(try !deletion.deleteWithoutCaller(userID: userID, now: world.now, logger: logger, where: { profile in
            decidedOn.append(profile.userID)
            return false
        }))
        #expect(decidedOn == [userID])
        #expect(try world.allItems() == before, "refused: nothing marked, nothing deleted")

        #expect(try deletion.deleteWithoutCaller(userID: userID, now: world.now, logger: logger, where: { $0.userID == userID }))
        try Self.expectNoTrace(of: userID, links: [TableKey(pk: "IDENTITY#google#kept", sk: "LINK")], emails: ["kept@example.com"], in: world)
    }
}
