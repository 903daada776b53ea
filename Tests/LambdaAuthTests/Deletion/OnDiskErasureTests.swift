import Crypto
@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Erased means erased on disk (contract section 13): once `delete-account` answered, no file of
/// the local store holds the user's id, subjects or email, in its content or its name, while
/// the other users' data is still all there.
@Suite(.serialized) struct OnDiskErasureTests {
    /// Every file and directory under `root` whose name or bytes contain one of `needles`.
    /// Contract section 20's one exception to section 13: the revocation list's entry that names
    /// the deleted user (its id alone) until its access tokens can no longer be valid.
    static func beyondTheRevocationList(_ found: [String]) -> [String] {
        found.filter { !$0.hasPrefix("REVOKED#") && !($0.hasPrefix("content ") && $0.contains("/REVOKED#")) }
    }

    static func traces(of needles: [String], under root: String) -> [String] {
        var found: [String] = []
        func walk(_ path: String) {
            var status = stat()
            guard lstat(path, &status) == 0 else { return }
            let name = String(path.split(separator: "/").last ?? "")
            for needle in needles where name.contains(needle) || name.contains(StoreLayout.escape(needle)) {
                found.append("name \(path)")
            }
            if status.st_mode & S_IFMT == S_IFDIR {
                for entry in (try? FileSystem.listDirectory(path)) ?? [] { walk(path + "/" + entry) }
                return
            }
            let bytes = (try? FileSystem.readFile(path)) ?? []
            for needle in needles where bytes.contains(Array(needle.utf8)) { found.append("content \(path): \(needle)") }
        }
        walk(root)
        return found
    }

    @Test func afterDeleteAccountNoStoreFileHoldsTheUser() throws {
        let world = FlowWorld()
        let subject = "erasure-subject-71", appleSubject = "000555.erasure.71", email = "erasure-71@example.com"
        let stayer = world.signIn(token: world.googleToken(subject: "stays-subject", email: "stays@example.com"))
        let signedIn = world.signIn(token: world.googleToken(subject: subject, email: email))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let accessToken = try #require(signedIn["tokens"]?["accessToken"])
        // Give the log and the partition files some history of the user: a refresh, a second
        // identity, a second session.
        #expect(world.run("refresh", ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])]).errorCode == nil)
        #expect(world.run("link-provider", ["accessToken": accessToken, "provider": "apple",
                                            "idToken": .string(world.appleToken(subject: appleSubject))]).errorCode == nil)
        world.signIn(token: world.googleToken(subject: subject, email: email))
        let needles = [userID, subject, appleSubject, email]
        #expect(!Self.traces(of: needles, under: world.storeDirectory).isEmpty, "the probe finds the user before the deletion")

        let deleted = world.run("delete-account", ["accessToken": accessToken])
        #expect(deleted.responseBody?["deleted"] == true, "\(deleted.stdoutText)")
        // Contract section 20 (which comes after section 13's erasure): the revocation list names
        // the deleted user, in its own partition, for as long as an access token of theirs can
        // still be valid (its `ttl`); nothing else of the user is left anywhere.
        let left = Self.traces(of: needles, under: world.storeDirectory)
        let listed = left.filter { $0.hasPrefix("content ") && $0.contains("REVOKED") && $0.hasSuffix(": " + userID) }
        #expect(left.filter { !listed.contains($0) }.isEmpty, "\(left)")
        let entries = try world.allItems().filter { $0["userId"]?.stringValue == userID }
        #expect(entries.count == 1 && entries.allSatisfy { ($0["PK"]?.stringValue ?? "").hasPrefix("REVOKED#") }, "\(entries)")
        #expect(try world.allItems(at: world.now + 961).filter { $0["userId"]?.stringValue == userID }.isEmpty)

        let stayerID = try #require(stayer["user"]?["id"]?.stringValue)
        #expect(try world.table().getItem(TableKey(pk: "USER#\(stayerID)", sk: "PROFILE")) != nil, "the other user is intact")
        #expect(world.run("sessions", ["accessToken": try #require(stayer["tokens"]?["accessToken"])]).errorCode == nil)
    }
    /// Every item (expired or not) whose key or content holds one of `needles`, as the backend stores it.
    static func items(holding needles: [String], in world: FlowWorld) throws -> [String] {
        try world.allItems(at: 0).compactMap { item -> String? in
            let text = DynamoJSON.encode(item).serialized()
            let held = needles.filter { text.contains($0) }
            return held.isEmpty ? nil : "\(item["PK"]?.stringValue ?? "?") \(item["SK"]?.stringValue ?? "?"): \(held)"
        }
    }

    /// No item (and on the local store no file, by name or bytes) holds any of `needles`, but for
    /// at most `revocationEntries` entries of the revocation list.
    static func expectErased(_ needles: [String], in world: FlowWorld, backend: FlowWorld.Backend, revocationEntries: Int = 1,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        let items = try items(holding: needles, in: world)
        #expect(beyondTheRevocationList(items).isEmpty && items.count <= revocationEntries,
                "at most \(revocationEntries) revocation-list entries: \(items)", sourceLocation: sourceLocation)
        if backend == .local {
            let left = traces(of: needles, under: world.storeDirectory)
            #expect(beyondTheRevocationList(left).isEmpty && (revocationEntries > 0 || left.isEmpty), "\(left)", sourceLocation: sourceLocation)
        }
    }

    /// The user holds an item of every kind in docs/table-layout.md that can name a user: the
    /// partition's (profile, each identity's side, a passkey's, session, refresh token, Apple's
    /// sealed token, the passkey handle, a pending registration challenge, an expired item) and
    /// the other partitions' (both sides of each link, the email claim, a pending one-time code
    /// for its address, the per-address code counter). After delete-account no item and (local
    /// store) no file holds its id, subjects, passkey, handle or addresses, in names or bytes.
    @Test(arguments: FlowWorld.Backend.allCases)
    func afterDeleteAccountNoItemOfAnyKindNamesTheUser(backend: FlowWorld.Backend) throws {
        let apple = try AppleServerFixture()
        let environment = apple.environment.merging(EmailCodeWorld.environment()) { $1 }.merging(PasskeyFlowTests.passkeysOn) { $1 }
        let world = try FlowWorld(environment, backend: backend)
        world.setEnvironment("AUTH_EMAIL_SENDER", "outbox:\(world.directory)/outbox")
        let codes = EmailCodeWorld(world: world, flows: try world.inProcess())
        let appleSubject = "000555.kinds.72", googleSubject = "kinds-subject-72"
        let relay = "kinds-72@privaterelay.appleid.com", email = "kinds-72@example.com", tagged = "kinds-72+codes@example.com"
        let stayer = world.signIn(token: world.googleToken(subject: "stays-72", email: "stays-72@example.com"))

        // Apple first, with an authorization code: Apple's refresh token is sealed and kept.
        let signedIn = world.run("signin", ["provider": "apple", "idToken": .string(world.appleToken(subject: appleSubject, email: relay)),
                                            "authorizationCode": .string(apple.server.mintCode(subject: appleSubject, clientID: TestIssuer.appleAudience))])
        let body = try #require(signedIn.responseBody, "\(signedIn.stdoutText)")
        let userID = try #require(body["user"]?["id"]?.stringValue, "\(signedIn.stdoutText)")
        let accessToken = try #require(body["tokens"]?["accessToken"]?.stringValue)
        let linked = world.run("link-provider", ["accessToken": .string(accessToken), "provider": "google",
                                                 "idToken": .string(world.googleToken(subject: googleSubject, email: email))])
        #expect(linked.errorCode == nil, "\(linked.stdoutText)")
        let code = try #require(try codes.start(tagged).get().status == 202 ? codes.latestCode(tagged) : nil)
        #expect(throws: Never.self) { try codes.link(tagged, code: code, accessToken: accessToken).get() }
        let (_, passkeyID) = try PasskeyFlowTests.register(world, PasskeyFlowTests.Session(userID: userID, accessToken: accessToken))
        // Pending when the account goes: a registration's options, a code to the address.
        let options = try PasskeyFlowTests.passkey(world, ["action": "register-options", "accessToken": .string(accessToken)])
        let handle = try #require(options["publicKey"]?["user"]?["id"]?.stringValue)
        #expect(try codes.start(email).get().status == 202)
        // An item past its ttl still names the user until something sweeps it.
        try world.table().putItem(["PK": .s("USER#\(userID)"), "SK": .s("SESSION#expired-72"), "status": .s("REVOKED"),
                                   "ttl": .n(world.now - 10)])

        let kinds = try world.allItems(at: 0).map { "\($0["PK"]?.stringValue ?? "") \($0["SK"]?.stringValue ?? "")" }
        for kind in ["USER#\(userID) PROFILE", "USER#\(userID) IDENTITY#apple", "USER#\(userID) IDENTITY#google",
                     "USER#\(userID) IDENTITY#email", "USER#\(userID) IDENTITY#passkey#", "USER#\(userID) SESSION#",
                     "USER#\(userID) REFRESH#", "USER#\(userID) TOKEN#apple", "USER#\(userID) WEBAUTHN#HANDLE",
                     "USER#\(userID) WEBAUTHN#CHALLENGE#", "IDENTITY#apple#\(appleSubject) LINK", "IDENTITY#google#\(googleSubject) LINK",
                     "IDENTITY#email#\(tagged) LINK", "IDENTITY#passkey#\(passkeyID) LINK", "OTP#\(email) CODE",
                     "RATE#otp-email#\(email) SLOTS"] {
            #expect(kinds.contains { $0.hasPrefix(kind) }, "the user holds a \(kind) item before the deletion")
        }
        #expect(try world.allItems(at: 0).contains { $0["PK"]?.stringValue?.hasPrefix("EMAIL#") == true && $0["userId"] == .s(userID) },
                "the user claims an address")
        let needles = [userID, appleSubject, googleSubject, relay, email, tagged, passkeyID, handle]

        let deleted = world.run("delete-account", ["accessToken": .string(accessToken)])
        #expect(deleted.responseBody?["deleted"] == true, "\(deleted.stdoutText)")
        try Self.expectErased(needles, in: world, backend: backend)
        let stayerID = try #require(stayer["user"]?["id"]?.stringValue)
        #expect(try world.table().getItem(TableKey(pk: "USER#\(stayerID)", sk: "PROFILE")) != nil, "the other user is intact")
    }

    /// A user whose sessions and tokens have all expired (an operator's or Apple's deletion, no
    /// caller): its expired items are deleted too, not left for a sweeper that may take days
    /// (DynamoDB) or never come (a local file whose family has nothing live to rewrite it for).
    @Test(arguments: FlowWorld.Backend.allCases)
    func aDeletionWithoutCallerTakesTheUsersExpiredItemsToo(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "lapsed-73", email: "lapsed-73@example.com"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        #expect(world.run("refresh", ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])]).errorCode == nil)
        if backend == .local { try LocalTable(directory: world.storeDirectory, clock: FixedClock(Double(world.now))).eraseDeletedItems() }
        world.advanceClock(by: 400 * 86_400)
        #expect(try world.allItems().filter { $0["PK"]?.stringValue == "USER#\(userID)" && $0["SK"]?.stringValue?.hasPrefix("S") == true }.isEmpty,
                "every session has expired")

        let flows = try world.inProcess()
        #expect(try flows.services.deletion.deleteWithoutCaller(userID: userID, now: world.now, logger: Logger.jsonLines(level: .error)))
        let needles = [userID, "lapsed-73"]
        try Self.expectErased(needles, in: world, backend: backend)
    }

    /// A guest past its expiry: its profile is hidden from reads, so the deletion finds no user,
    /// only leftovers; the expired profile goes with them rather than naming the id until swept.
    @Test(arguments: FlowWorld.Backend.allCases)
    func anExpiredGuestsDeletionTakesItsProfileToo(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(["AUTH_GUEST": "on", "AUTH_GUEST_TTL": "86400"], backend: backend)
        let guest = world.run("signin", ["provider": "guest"])
        let userID = try #require(guest.responseBody?["user"]?["id"]?.stringValue, "\(guest.stdoutText)")
        if backend == .local { try LocalTable(directory: world.storeDirectory, clock: FixedClock(Double(world.now))).eraseDeletedItems() }
        world.advanceClock(by: 2 * 86_400)
        #expect(try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE")) == nil, "the guest has expired")

        let flows = try world.inProcess()
        #expect(try flows.services.deletion.deleteWithoutCaller(userID: userID, now: world.now, logger: Logger.jsonLines(level: .error)))
        // A guest never had an access token the revocation list would need to name.
        try Self.expectErased([userID], in: world, backend: backend, revocationEntries: 0)
    }
}
