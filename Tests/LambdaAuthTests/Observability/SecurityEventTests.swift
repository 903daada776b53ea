import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Contract section 18: every request, answered or refused, writes exactly one event line, named
/// by the most specific thing that happened, with the fields that identify it and never a token,
/// code or secret; whatever `AUTH_LOG_LEVEL` says. Both backends.
@Suite struct SecurityEventTests {
    /// The event lines of one process's log.
    static func events(_ output: ProcessRunner.Output) -> [JSONValue] {
        output.stderrText.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }.filter { $0["event"] != nil }
    }

    /// The one event line of `output` (a test failure when there is not exactly one).
    static func event(_ output: ProcessRunner.Output, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue {
        let found = events(output)
        #expect(found.count == 1, "expected one event line, found \(found.count): \(output.stderrText.suffix(600))",
                sourceLocation: sourceLocation)
        return found.first ?? [:]
    }

    static func httpEvent(_ path: String, _ body: JSONValue, sourceIP: String) -> JSONValue {
        ["version": "2.0", "routeKey": .string("POST " + path), "rawPath": .string(path), "headers": ["content-type": "application/json"],
         "requestContext": ["http": ["method": "POST", "path": .string(path), "sourceIp": .string(sourceIP)], "requestId": "apigw-1"],
         "body": .string(body.serialized()), "isBase64Encoded": false]
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func everyRequestOfTheLifeCycleWritesItsOneEvent(backend: FlowWorld.Backend) throws {
        // The error level hides every other line: the event lines are written all the same.
        let world = try FlowWorld(["AUTH_LOG_LEVEL": "error", "AUTH_GUEST": "on", "AUTH_GUEST_RATE": "1"], backend: backend)
        var secrets: [String] = []

        let google = world.googleToken(subject: "events-user")
        secrets.append(google)
        let signIn = world.run("signin", ["provider": "google", "idToken": .string(google)])
        let body = try #require(signIn.responseBody)
        let userID = try #require(body["user"]?["id"]?.stringValue), sessionID = try #require(body["session"]?["id"]?.stringValue)
        let accessToken = try #require(body["tokens"]?["accessToken"]?.stringValue)
        let refreshToken = try #require(body["tokens"]?["refreshToken"]?.stringValue)
        secrets += [accessToken, refreshToken]
        let signedIn = Self.event(signIn)
        #expect(signedIn["event"] == "signin" && signedIn["userId"] == .string(userID) && signedIn["sessionId"] == .string(sessionID))
        #expect(signedIn["provider"] == "google" && signedIn["level"] == "info" && signedIn["status"] == 200)
        #expect(signedIn["requestId"]?.stringValue?.isEmpty == false && signedIn["durationMs"]?.doubleValue != nil)
        #expect(signIn.stderrText.split(separator: "\n").count == 1, "AUTH_LOG_LEVEL=error: the event line alone")

        let refreshed = world.run("refresh", ["refreshToken": .string(refreshToken)])
        let next = try #require(refreshed.responseBody?["tokens"]?["refreshToken"]?.stringValue)
        secrets.append(next)
        let refreshEvent = Self.event(refreshed)
        #expect(refreshEvent["event"] == "refresh" && refreshEvent["userId"] == .string(userID) && refreshEvent["sessionId"] == .string(sessionID))

        let unknown = Self.event(world.run("refresh", ["refreshToken": "not-a-token-of-ours"]))
        #expect(unknown["event"] == "refresh_failed" && unknown["code"] == "REFRESH_TOKEN_NOT_FOUND" && unknown["level"] == "warning")

        let linked = Self.event(world.run("link-provider", ["provider": "apple", "idToken": .string(world.appleToken(subject: "000123.events.1")),
                                                            "accessToken": .string(accessToken)]))
        #expect(linked["event"] == "identity_linked" && linked["provider"] == "apple" && linked["userId"] == .string(userID))
        let unlinked = Self.event(world.run("link-provider", ["provider": "apple", "action": "unlink", "accessToken": .string(accessToken)]))
        #expect(unlinked["event"] == "identity_unlinked" && unlinked["provider"] == "apple")

        #expect(Self.event(world.run("sessions", ["accessToken": .string(accessToken)]))["event"] == "sessions")
        let second = world.signIn(token: world.googleToken(subject: "events-user"))
        let secondSession = try #require(second["session"]?["id"]?.stringValue)
        let revoked = Self.event(world.run("sessions", ["action": "revoke", "sessionId": .string(secondSession), "accessToken": .string(accessToken)]))
        #expect(revoked["event"] == "session_revoked" && revoked["sessionId"] == .string(secondSession))

        #expect(Self.event(world.run("well-known", ["document": "jwks"]))["event"] == "well_known")
        let malformed = Self.event(world.run("signin", raw: Array("not json".utf8)))
        #expect(malformed["event"] == "signin_failed" && malformed["code"] == "INVALID_REQUEST")

        // Over HTTP: the source address, API Gateway's request id, and the rate limit's own event.
        let guest = Self.httpEvent("/auth/signin", ["provider": "guest"], sourceIP: "203.0.113.61")
        let firstGuest = Self.event(world.run("signin", guest))
        #expect(firstGuest["event"] == "signin" && firstGuest["provider"] == "guest" && firstGuest["sourceIp"] == "203.0.113.61")
        let limited = Self.event(world.run("signin", guest))
        #expect(limited["event"] == "rate_limited" && limited["code"] == "RATE_LIMITED" && limited["sourceIp"] == "203.0.113.61")

        // A refused link names the verified caller (contract section 18: failures where known).
        let stranger = world.signIn(token: world.googleToken(subject: "events-stranger"))
        let strangerToken = try #require(stranger["tokens"]?["accessToken"]?.stringValue)
        let refusedLink = Self.event(world.run("link-provider", ["provider": "google", "idToken": .string(world.googleToken(subject: "events-user")),
                                                                 "accessToken": .string(strangerToken)]))
        #expect(refusedLink["event"] == "link_provider_failed" && refusedLink["code"] == "IDENTITY_LINKED_TO_OTHER_USER")
        #expect(refusedLink["userId"] == stranger["user"]?["id"] && refusedLink["sessionId"] == stranger["session"]?["id"], "\(refusedLink.serialized())")

        // Reuse (the first token again, two rotations on: no grace retry), and the line says whose
        // family it revoked.
        let third = try #require(world.run("refresh", ["refreshToken": .string(next)]).responseBody?["tokens"]?["refreshToken"]?.stringValue)
        secrets.append(third)
        let reused = Self.event(world.run("refresh", ["refreshToken": .string(refreshToken)]))
        #expect(reused["event"] == "refresh_reuse_detected" && reused["code"] == "REFRESH_TOKEN_REUSED", "\(reused.serialized())")
        #expect(reused["userId"] == .string(userID) && reused["sessionId"] == .string(sessionID), "\(reused.serialized())")
        // A token of the revoked family: refused, and still named.
        let revokedRefresh = Self.event(world.run("refresh", ["refreshToken": .string(third)]))
        #expect(revokedRefresh["event"] == "refresh_failed" && revokedRefresh["code"] == "REFRESH_TOKEN_REVOKED", "\(revokedRefresh.serialized())")
        #expect(revokedRefresh["userId"] == .string(userID) && revokedRefresh["sessionId"] == .string(sessionID))

        // The sign-out names its caller, by access token and by refresh token alone.
        let fourth = world.signIn(token: world.googleToken(subject: "events-user"))
        let signedOut = Self.event(world.run("signout", ["refreshToken": .string(try #require(fourth["tokens"]?["refreshToken"]?.stringValue))]))
        #expect(signedOut["event"] == "signout" && signedOut["userId"] == .string(userID) && signedOut["sessionId"] == fourth["session"]?["id"],
                "\(signedOut.serialized())")
        let fifth = world.signIn(token: world.googleToken(subject: "events-user"))
        let signedOutByAccess = Self.event(world.run("signout", ["accessToken": .string(try #require(fifth["tokens"]?["accessToken"]?.stringValue))]))
        #expect(signedOutByAccess["event"] == "signout" && signedOutByAccess["userId"] == .string(userID)
                && signedOutByAccess["sessionId"] == fifth["session"]?["id"], "\(signedOutByAccess.serialized())")

        let other = world.signIn(token: world.googleToken(subject: "events-deleted", email: "deleted@example.com"))
        let otherToken = try #require(other["tokens"]?["accessToken"]?.stringValue)
        let deleted = Self.event(world.run("delete-account", ["accessToken": .string(otherToken)]))
        #expect(deleted["event"] == "account_deleted" && deleted["userId"] == other["user"]?["id"])

        // A configuration error is a failed request like any other.
        let misconfigured = Self.event(world.run("refresh", ["refreshToken": "x"], environment: ["AUTH_LOG_LEVEL": "loud"]))
        #expect(misconfigured["event"] == "refresh_failed" && misconfigured["code"] == "CONFIG_ERROR" && misconfigured["level"] == "error")

        let lines = world.logs.joined(separator: "\n")
        for secret in secrets {
            #expect(!lines.contains(secret), "a token reached the log: \(secret.prefix(12))…")
            for part in secret.split(separator: ".") where part.count >= 24 { #expect(!lines.contains(part)) }
        }
    }

    @Test func aGuestsFirstIdentityIsAnUpgradeAndTheSecondALink() throws {
        let world = FlowWorld(["AUTH_GUEST": "on"])
        let guest = try #require(world.run("signin", ["provider": "guest"]).responseBody)
        let accessToken = try #require(guest["tokens"]?["accessToken"]?.stringValue)
        let sessionID = try #require(guest["session"]?["id"]?.stringValue)
        let upgraded = Self.event(world.run("link-provider", ["provider": "google", "idToken": .string(world.googleToken(subject: "upgraded")),
                                                              "accessToken": .string(accessToken)]))
        #expect(upgraded["event"] == "guest_upgraded" && upgraded["userId"] == guest["user"]?["id"] && upgraded["sessionId"] == .string(sessionID))
        let linked = Self.event(world.run("link-provider", ["provider": "apple", "idToken": .string(world.appleToken(subject: "000123.upgraded")),
                                                            "accessToken": .string(accessToken)]))
        #expect(linked["event"] == "identity_linked" && linked["provider"] == "apple")
    }

    @Test func theEventOfAnAnswerIsDerivedFromItsHandlerAndOutcome() {
        let request = InvocationRequest(kind: .direct, body: ["provider": "a secret pasted here", "action": "unlink"])
        let ok = InvocationResponse(body: ["user": ["id": "u-1"]])
        let linked = SecurityEvent.of(handler: "link-provider", request: request, response: ok)
        #expect(linked == SecurityEvent("identity_unlinked", fields: ["userId": "u-1"]), "free text is never logged as a provider")
        var upgraded = ok
        upgraded.event = SecurityEvent("guest_upgraded", fields: ["provider": "google"])
        #expect(SecurityEvent.of(handler: "link-provider", request: nil, response: upgraded)
            == SecurityEvent("guest_upgraded", fields: ["userId": "u-1", "provider": "google"]))
        let reused = InvocationResponse(error: AuthError(.refreshTokenReused, "reused"))
        #expect(SecurityEvent.of(handler: "refresh", request: nil, response: reused) == SecurityEvent("refresh_reuse_detected", fields: ["code": "REFRESH_TOKEN_REUSED"]))
        let named = InvocationResponse(error: AuthError(.refreshTokenReused, "reused").about(userID: "u-1", sessionID: "s-1"))
        #expect(SecurityEvent.of(handler: "refresh", request: nil, response: named)
            == SecurityEvent("refresh_reuse_detected", fields: ["code": "REFRESH_TOKEN_REUSED", "userId": "u-1", "sessionId": "s-1"]))
        #expect(named.body["error"]?["userId"] == nil && !named.body.serialized().contains("u-1"), "the subject is for the log, never answered")
        #expect(SecurityEvent.outcome(of: reused) == "REFRESH_TOKEN_REUSED" && SecurityEvent.outcome(of: ok) == "ok")
        #expect(SecurityEvent.of(handler: "otp-start", request: nil, response: InvocationResponse(status: 202, body: ["sent": true])).name == "code_sent")
        #expect(SecurityEvent.of(handler: "apple-notifications", request: nil, response: InvocationResponse(body: ["handled": "consent-revoked"]))
            == SecurityEvent("apple_notification", fields: ["type": "consent-revoked"]))
        #expect(SecurityEvent.of(handler: "well-known", request: nil, response: InvocationResponse(error: AuthError(.notFound, "x"))).name
            == "well_known_failed")
    }
}
