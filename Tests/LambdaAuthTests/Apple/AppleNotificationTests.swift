import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Testing

/// `apple-notifications` (contract section 8): each event type on both backends, forged
/// payloads refused with the ID token codes, and replays that change nothing.
@Suite(.serialized) struct AppleNotificationTests {
    static let subject = "000555.notified.1"

    /// A notification as Apple sends it: `events` a JSON string (or, `asObject`, an object).
    static func payload(_ world: FlowWorld, type: String, subject: String = AppleNotificationTests.subject, jti: String,
                        asObject: Bool = false, changes: [String: JSONValue?] = [:], header: [String: JSONValue] = [:],
                        issuer: TestIssuer? = nil) -> String {
        var event: [String: JSONValue] = ["type": .string(type), "sub": .string(subject), "event_time": .number(world.now * 1000)]
        if type.hasPrefix("email-") {
            event["email"] = "relay@privaterelay.appleid.com"
            event["is_private_email"] = "true"
        }
        var claims: [String: JSONValue] = [
            "iss": "https://appleid.apple.com", "aud": .string(TestIssuer.appleAudience), "iat": .number(world.now),
            "exp": .number(world.now + 86_400), "jti": .string(jti),
            "events": asObject ? .object(event) : .string(JSONValue.object(event).serialized()),
        ]
        for (name, value) in changes { claims[name] = value }
        return (issuer ?? world.apple).token(claims, header: header, keyID: header["kid"]?.stringValue ?? world.apple.keyID)
    }

    static func notify(_ world: FlowWorld, _ payload: String) -> ProcessRunner.Output {
        world.run("apple-notifications", ["payload": .string(payload)])
    }

    /// A user with an Apple identity (and, `withGoogle`, a Google one linked first), signed in.
    static func user(_ world: FlowWorld, withGoogle: Bool) throws -> (userID: String, refreshTokens: [String]) {
        var refreshTokens: [String] = []
        if withGoogle {
            let google = world.signIn(token: world.googleToken(subject: "g-notified", email: "n@example.com"))
            let accessToken = try #require(google["tokens"]?["accessToken"])
            refreshTokens.append(try #require(google["tokens"]?["refreshToken"]?.stringValue))
            let linked = world.run("link-provider", ["accessToken": accessToken, "provider": "apple",
                                                     "idToken": .string(world.appleToken(subject: subject))])
            #expect(linked.errorCode == nil, "\(linked.stdoutText)")
        }
        let apple = world.signIn(.apple, token: world.appleToken(subject: subject))
        refreshTokens.append(try #require(apple["tokens"]?["refreshToken"]?.stringValue))
        return (try #require(apple["user"]?["id"]?.stringValue), refreshTokens)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func consentRevokedSignsOutEverySessionAndUnlinksApple(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let (userID, refreshTokens) = try Self.user(world, withGoogle: true)
        let payload = Self.payload(world, type: "consent-revoked", jti: "consent-1")
        let output = Self.notify(world, payload)
        #expect(output.responseBody == ["handled": "consent-revoked"], "\(output.stdoutText)")
        for token in refreshTokens {
            #expect(world.run("refresh", ["refreshToken": .string(token)]).errorCode == "REFRESH_TOKEN_REVOKED")
        }
        let table = try world.table()
        #expect(try table.getItem(TableKey(pk: "IDENTITY#apple#\(Self.subject)", sk: "LINK")) == nil)
        #expect(try table.getItem(TableKey(pk: "USER#\(userID)", sk: "IDENTITY#apple")) == nil)
        #expect(try table.getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE")) != nil, "Google still signs this user in")
        let again = world.signIn(token: world.googleToken(subject: "g-notified", email: "n@example.com"))
        #expect(again["user"]?["id"]?.stringValue == userID)
        #expect(again["user"]?["identities"]?.arrayValue?.count == 1)
        // The replay of the same notification is a 200 that changes nothing.
        let items = try world.allItems().filter { $0["PK"]?.stringValue?.hasPrefix("NOTIFICATION#") == false }
        #expect(Self.notify(world, payload).responseBody == ["handled": "consent-revoked"])
        #expect(try world.allItems().filter { $0["PK"]?.stringValue?.hasPrefix("NOTIFICATION#") == false }.map(DynamoJSON.encode)
                == items.map(DynamoJSON.encode))
    }

    /// The replay record is one PutItem (one write unit), not a transaction of one item (two).
    @Test(arguments: FlowWorld.Backend.allCases)
    func aNotificationForNoKnownUserCostsTwoReadsAndOnePut(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let flows = try InProcessFlows(world)
        let handler = try flows.handler(HandlerCatalogue.appleNotifications)
        let context = InvocationContext(requestID: "counted-notification", logger: Logger.jsonLines(level: .error))
        let request = InvocationRequest(kind: .direct, body: [
            "payload": .string(Self.payload(world, type: "consent-revoked", subject: "000000.nobody", jti: "counted-1")),
        ])
        _ = flows.table.takeOperations()
        #expect(try handler.handle(request, context: context).body == ["handled": "consent-revoked"])
        #expect(flows.table.takeOperations() == ["GetItem", "GetItem", "PutItem"])
        #expect(try handler.handle(request, context: context).body == ["handled": "consent-revoked"])
        #expect(flows.table.takeOperations() == ["GetItem"], "a replay: its record is read, nothing written")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func accountDeleteOfAnAppleOnlyUserDeletesTheUser(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let (userID, refreshTokens) = try Self.user(world, withGoogle: false)
        let output = Self.notify(world, Self.payload(world, type: "account-delete", jti: "delete-1", asObject: true))
        #expect(output.responseBody == ["handled": "account-delete"], "\(output.stdoutText)")
        try AccountDeletionTests.expectNoTrace(of: userID, links: [TableKey(pk: "IDENTITY#apple#\(Self.subject)", sk: "LINK")],
                                               emails: [], in: world, fullScan: false)
        #expect(["REFRESH_TOKEN_NOT_FOUND", "REFRESH_TOKEN_REVOKED"].contains(world.run("refresh", ["refreshToken": .string(refreshTokens[0])]).errorCode ?? ""))
        #expect(world.signIn(.apple, token: world.appleToken(subject: Self.subject))["isNewUser"] == true)
        // Unknown user now: still a 200.
        let unknown = Self.notify(world, Self.payload(world, type: "consent-revoked", subject: "000000.nobody", jti: "nobody-1"))
        #expect(unknown.responseBody == ["handled": "consent-revoked"])
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func emailDisabledAndEnabledShowInTheIdentitiesAndReplaysChangeNothing(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        _ = try Self.user(world, withGoogle: false)
        func deliverable() -> JSONValue? {
            world.signIn(.apple, token: world.appleToken(subject: Self.subject))["user"]?["identities"]?.arrayValue?.first?["emailDeliverable"]
        }
        #expect(deliverable() == nil, "unknown until Apple says")
        let disabled = Self.payload(world, type: "email-disabled", jti: "email-1")
        #expect(Self.notify(world, disabled).responseBody == ["handled": "email-disabled"])
        #expect(deliverable() == false)
        let enabled = Self.payload(world, type: "email-enabled", jti: "email-2")
        #expect(Self.notify(world, enabled).responseBody == ["handled": "email-enabled"])
        #expect(deliverable() == true)
        // The older email-disabled, resent: acknowledged, and it undoes nothing.
        #expect(Self.notify(world, disabled).responseBody == ["handled": "email-disabled"])
        #expect(deliverable() == true)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func forgedPayloadsGetTheIDTokenCodesAndChangeNothing(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        _ = try Self.user(world, withGoogle: false)
        let before = try world.allItems().map(DynamoJSON.encode)
        let genuine = Self.payload(world, type: "account-delete", jti: "forged")
        let claims = try JSONWebToken(parsing: genuine).claims
        let forged: [(String, String)] = [
            ("INVALID_SIGNATURE", Self.payload(world, type: "account-delete", jti: "f1", issuer: world.google)),
            ("INVALID_AUDIENCE", Self.payload(world, type: "account-delete", jti: "f2", changes: ["aud": "com.example.other"])),
            ("INVALID_ISSUER", Self.payload(world, type: "account-delete", jti: "f3", changes: ["iss": "https://accounts.google.com"])),
            ("TOKEN_EXPIRED", Self.payload(world, type: "account-delete", jti: "f4", changes: ["exp": .number(world.now - 3600)])),
            ("UNSUPPORTED_ALGORITHM", TokenForge.token(header: ["alg": "none", "kid": .string(world.apple.keyID)], payload: .object(claims), signature: [])),
            ("UNSUPPORTED_ALGORITHM", TokenForge.token(header: ["alg": "HS256", "kid": .string(world.apple.keyID)], payload: .object(claims),
                                                       signature: Array(repeating: 7, count: 32))),
            ("UNKNOWN_KEY_ID", Self.payload(world, type: "account-delete", jti: "f5", header: ["kid": "not-apples"])),
            ("MALFORMED_TOKEN", "not.a-jwt"),
            ("MALFORMED_TOKEN", Self.payload(world, type: "account-delete", jti: "f6", changes: ["events": "not json"])),
        ]
        for (code, payload) in forged {
            let output = Self.notify(world, payload)
            #expect(output.errorCode == code, "\(code): \(output.stdoutText)")
        }
        #expect(Self.notify(world, "").errorCode == "INVALID_REQUEST")
        #expect(try world.allItems().map(DynamoJSON.encode) == before, "nothing changed")
        let logs = world.logs.joined(separator: "\n")
        for (_, payload) in forged {
            for part in payload.split(separator: ".") where part.count >= 24 { #expect(!logs.contains(part), "a payload reached the logs") }
        }
    }
}
