import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Contract section 20 on both backends: each kind of revocation lists what it ends in its own
/// commit, `well-known` publishes it signed, the `authorizer` refuses it, and the list forgets it
/// once no access token of it can still be valid.
@Suite(.serialized) struct RevocationListTests {
    /// The published list, verified with the published JWKS (as a resource server would).
    static func published(_ world: FlowWorld) throws -> RevocationList {
        let document = world.run("well-known", ["document": "revocations"])
        let jws = try #require(document.responseBody?.stringValue, "\(document.stdoutText)")
        let jwks = try #require(world.run("well-known", ["document": "jwks"]).responseBody)
        let keys = try JSONWebKeySet(jwks, algorithms: [.rs256, .es256])
        return try RevocationDocument.parse(jws, issuer: world.environment["AUTH_ISSUER"] ?? "lambda-auth", now: world.now) { keys.key(id: $0) }
    }

    /// The authorizer's answer to a REST TOKEN event with `accessToken`: "Allow" or "Deny".
    static func authorize(_ world: FlowWorld, _ accessToken: String) -> String? {
        let answer = world.run("authorizer", ["type": "TOKEN", "authorizationToken": .string("Bearer " + accessToken),
                                              "methodArn": "arn:aws:execute-api:us-east-1:123456789012:api/prod/GET/orders"])
        return answer.responseBody?["policyDocument"]?["Statement"]?.arrayValue?.first?["Effect"]?.stringValue
    }

    struct Session {
        var userID: String
        var sessionID: String
        var accessToken: String
        var refreshToken: String
    }

    static func signIn(_ world: FlowWorld, _ provider: ProviderName = .google, subject: String) throws -> Session {
        let token = provider == .apple ? world.appleToken(subject: subject) : world.googleToken(subject: subject, email: "\(subject)@example.com")
        let body = world.signIn(provider, token: token)
        return Session(userID: try #require(body["user"]?["id"]?.stringValue), sessionID: try #require(body["session"]?["id"]?.stringValue),
                       accessToken: try #require(body["tokens"]?["accessToken"]?.stringValue),
                       refreshToken: try #require(body["tokens"]?["refreshToken"]?.stringValue))
    }

    /// A token issued under the template's settings passes the authorizer until its session is
    /// listed, and is refused after; nothing else of the same user is listed by a session's end.
    static func expectListed(_ world: FlowWorld, sessions: [Session], users: [String] = [], still alive: [Session] = [],
                             _ what: String) throws {
        let list = try published(world)
        for session in sessions {
            #expect(list.sessionIDs.contains(session.sessionID), "\(what): session not listed")
            #expect(authorize(world, session.accessToken) == "Deny", "\(what): the authorizer let a revoked session through")
        }
        for user in users { #expect(list.userIDs.contains(user), "\(what): user not listed") }
        for session in alive {
            #expect(!list.revokes(userID: session.userID, sessionID: session.sessionID), "\(what): a live session is listed")
            #expect(authorize(world, session.accessToken) == "Allow", "\(what): a live session refused")
        }
    }

    static func world(_ backend: FlowWorld.Backend) throws -> FlowWorld {
        // The authorizer applies API Gateway's rules: RSA keys, and the store's RS256 dev key is one.
        try FlowWorld(["AUTH_MAX_SESSIONS": "2", "AUTH_REFRESH_GRACE": "0"], backend: backend)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func everyRevocationKindIsListedInItsOwnCommit(backend: FlowWorld.Backend) throws {
        let world = try Self.world(backend)
        // signout (session scope, by access token)
        let phone = try Self.signIn(world, subject: "kinds")
        let tablet = try Self.signIn(world, subject: "kinds")
        #expect(Self.authorize(world, phone.accessToken) == "Allow")
        #expect(try Self.published(world).sessionIDs.isEmpty)
        #expect(world.run("signout", ["accessToken": .string(phone.accessToken)]).responseBody == ["revokedSessions": 1])
        try Self.expectListed(world, sessions: [phone], still: [tablet], "signout")
        #expect(world.run("sessions", ["accessToken": .string(phone.accessToken)]).errorCode == "ACCESS_TOKEN_REVOKED")

        // sessions revoke
        let laptop = try Self.signIn(world, subject: "kinds")
        #expect(world.run("sessions", ["accessToken": .string(tablet.accessToken), "action": "revoke",
                                       "sessionId": .string(laptop.sessionID)]).responseBody == ["revokedSessions": 1])
        try Self.expectListed(world, sessions: [laptop], still: [tablet], "sessions revoke")

        // eviction: AUTH_MAX_SESSIONS=2, the tablet is the least recently active
        world.advanceClock(by: 1)
        let watch = try Self.signIn(world, subject: "kinds")
        world.advanceClock(by: 1)
        let car = try Self.signIn(world, subject: "kinds")
        try Self.expectListed(world, sessions: [tablet], still: [watch, car], "eviction")

        // reuse: the first refresh token presented after its rotation
        let rotated = world.run("refresh", ["refreshToken": .string(watch.refreshToken)])
        #expect(rotated.errorCode == nil, "\(rotated.stdoutText)")
        world.advanceClock(by: 5)
        #expect(world.run("refresh", ["refreshToken": .string(watch.refreshToken)]).errorCode == "REFRESH_TOKEN_REUSED")
        try Self.expectListed(world, sessions: [watch], still: [car], "reuse")

        // signout global
        #expect(world.run("signout", ["accessToken": .string(car.accessToken), "scope": "global"]).errorCode == nil)
        try Self.expectListed(world, sessions: [car], "signout global")

        // deletion: the user and every session it had
        let leaver = try Self.signIn(world, subject: "leaver")
        let stayer = try Self.signIn(world, subject: "stayer")
        let deleted = world.run("delete-account", ["accessToken": .string(leaver.accessToken)])
        #expect(deleted.responseBody?["deleted"] == true, "\(deleted.stdoutText)")
        try Self.expectListed(world, sessions: [leaver], users: [leaver.userID], still: [stayer], "deletion")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func applesNotificationsAreListed(backend: FlowWorld.Backend) throws {
        let world = try Self.world(backend)
        let consenting = try Self.signIn(world, .apple, subject: AppleNotificationTests.subject)
        let other = try Self.signIn(world, subject: "bystander")
        let consent = AppleNotificationTests.notify(world, AppleNotificationTests.payload(world, type: "consent-revoked", jti: "r-1"))
        #expect(consent.responseBody == ["handled": "consent-revoked"], "\(consent.stdoutText)")
        // Its only identity: the user is deleted, so its id is listed too.
        try Self.expectListed(world, sessions: [consenting], users: [consenting.userID], still: [other], "consent-revoked")

        let deleting = try Self.signIn(world, .apple, subject: "000555.deleting.1")
        let delete = AppleNotificationTests.notify(world, AppleNotificationTests.payload(world, type: "account-delete",
                                                                                        subject: "000555.deleting.1", jti: "d-1"))
        #expect(delete.responseBody == ["handled": "account-delete"], "\(delete.stdoutText)")
        try Self.expectListed(world, sessions: [deleting], users: [deleting.userID], still: [other], "account-delete")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func theListForgetsWhatNoTokenCanStillUse(backend: FlowWorld.Backend) throws {
        let world = try Self.world(backend)
        let session = try Self.signIn(world, subject: "forgotten")
        #expect(world.run("signout", ["accessToken": .string(session.accessToken)]).errorCode == nil)
        // AUTH_ACCESS_TOKEN_TTL (900) + AUTH_CLOCK_SKEW (60): listed to the last second, gone after.
        world.advanceClock(by: 960 - 1)
        #expect(try Self.published(world).sessionIDs == [session.sessionID])
        world.advanceClock(by: 2)
        #expect(try Self.published(world).sessionIDs.isEmpty)
        // Past its exp the token is refused by its own claims anyway.
        #expect(Self.authorize(world, session.accessToken) == "Deny")
    }

    /// The read is a Query of the window's hour partitions, whatever else the table holds: its
    /// cost follows the revocations of the last lifetime, not the users.
    @Test func theReadIsBoundedByTheWindowNotByTheUsers() throws {
        let world = try FlowWorld()
        for index in 0..<3 {
            let session = try Self.signIn(world, subject: "bounded-\(index)")
            #expect(world.run("signout", ["accessToken": .string(session.accessToken)]).errorCode == nil)
        }
        let recording = RecordingTable(try world.table())
        let services = try AuthServices(configuration: AuthConfiguration.fromEnvironment(world.environment), logger: .init(label: "t"),
                                        table: recording)
        let cache = services.makeRevocationCache()
        #expect(try cache.current().sessionIDs.count == 3)
        #expect(recording.takeOperations().allSatisfy { $0 == "Query" })
        // Served from memory for 5 s: no read per request.
        for _ in 0..<100 { _ = try cache.current() }
        #expect(recording.takeOperations().isEmpty)
        #expect(cache.reads == 1)
    }
}
