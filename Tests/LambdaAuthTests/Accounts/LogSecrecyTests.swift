import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// No ID token, access token, refresh token, credential or key may reach a log line or an error
/// message, on success paths and failure paths alike (debug logging on). The handlers run as
/// processes: whatever reaches their stderr counts, not only what their loggers write.
@Suite struct LogSecrecyTests {
    @Test func noSecretInAnyLogLine() throws {
        let world = FlowWorld(["AUTH_CREDENTIALS_SECRET": "log-secrecy-master-secret-0123456789"], processes: true)
        var secrets: [String] = ["log-secrecy-master-secret-0123456789"]
        var responses: [String] = []

        let googleToken = world.googleToken(subject: "secret-user")
        secrets.append(googleToken)
        let first = world.signIn(token: googleToken)
        for path in ["tokens.accessToken", "tokens.refreshToken", "credentials.secretAccessKey", "credentials.sessionToken"] {
            secrets.append(try #require(first.path(path)))
        }
        let refreshToken = try #require(first.path("tokens.refreshToken"))
        let accessToken = try #require(first.path("tokens.accessToken"))

        // Success and failure paths of every handler.
        let refreshed = world.run("refresh", ["refreshToken": .string(refreshToken)])
        secrets += ["tokens.accessToken", "tokens.refreshToken", "credentials.secretAccessKey"].compactMap { refreshed.responseBody?.path($0) }
        responses.append(refreshed.stdoutText)
        let reuse = world.run("refresh", ["refreshToken": .string(refreshToken)], environment: ["AUTH_NOW": String(world.now + 600)])
        #expect(reuse.errorCode == "REFRESH_TOKEN_REUSED")
        responses.append(reuse.stdoutText)
        let appleToken = world.appleToken(subject: "000888.secret.1")
        secrets.append(appleToken)
        let second = world.signIn(token: world.googleToken(subject: "secret-user-2"))
        let secondAccess = try #require(second.path("tokens.accessToken"))
        secrets.append(secondAccess)
        let linked = world.run("link-provider", ["provider": "apple", "idToken": .string(appleToken), "accessToken": .string(secondAccess)])
        #expect(linked.errorCode == nil)
        let tampered = String(googleToken.dropLast(4)) + "AAAA"
        secrets.append(tampered)
        for output in [
            world.run("signin", ["provider": "google", "idToken": .string(tampered)]),
            world.run("signin", ["provider": "google", "idToken": .string(googleToken), "nonce": "wrong"]),
            world.run("refresh", ["refreshToken": "not-a-real-token-but-still-secret"]),
            world.run("link-provider", ["provider": "apple", "idToken": .string(appleToken), "accessToken": .string(accessToken + "x")]),
            world.run("link-provider", ["provider": "apple", "idToken": .string(appleToken), "accessToken": .string(accessToken)]),
        ] {
            responses.append(output.stdoutText)
        }
        secrets.append("not-a-real-token-but-still-secret")

        // The development signing key and credentials secret created inside the store.
        for key in [TableKey(pk: "DEV#SECRETS", sk: "ACCESS_TOKEN_SIGNING_KEY_RS256")] {
            let pem = try #require(try world.table().getItem(key)?["pem"]?.stringValue)
            secrets += pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
        }
        let logs = world.logs.joined(separator: "\n")
        #expect(logs.contains("\"level\""), "the handlers logged nothing at debug level")
        for secret in secrets where secret.count >= 16 {
            #expect(!logs.contains(secret), "a secret reached the logs: \(secret.prefix(12))…")
            // A signature or payload alone is as bad as the whole token.
            for part in secret.split(separator: ".") where part.count >= 24 {
                #expect(!logs.contains(part), "part of a secret reached the logs: \(part.prefix(12))…")
            }
        }
        // Error responses never echo what the caller sent.
        let inputs = [googleToken, tampered, appleToken, "not-a-real-token-but-still-secret", accessToken]
        for response in responses.filter({ $0.contains("\"error\"") }) {
            for input in inputs { #expect(!response.contains(input)) }
        }
    }

    /// Every kind of event line (contract section 18), each produced for real, and not one of
    /// them, nor any other line, carries a token, a code or a secret.
    @Test func noEventLineCarriesASecret() throws {
        let world = FlowWorld(["AUTH_GUEST": "on", "AUTH_GUEST_RATE": "1", "AUTH_EMAIL": "on"], processes: true)
        world.setEnvironment("AUTH_EMAIL_SENDER", "outbox:" + world.directory + "/outbox")
        var secrets: [String] = []
        func keep(_ output: ProcessRunner.Output) -> JSONValue? {
            let body = output.responseBody
            for path in ["tokens.accessToken", "tokens.refreshToken", "credentials.secretAccessKey", "credentials.sessionToken"] {
                if let value = body?.path(path) { secrets.append(value) }
            }
            return body
        }
        let google = world.googleToken(subject: "every-event", email: "every@example.com")
        secrets.append(google)
        let signedIn = try #require(keep(world.run("signin", ["provider": "google", "idToken": .string(google)])))
        let accessToken = try #require(signedIn.path("tokens.accessToken")), firstRefresh = try #require(signedIn.path("tokens.refreshToken"))
        _ = keep(world.run("refresh", ["refreshToken": .string(firstRefresh)]))
        let apple = world.appleToken(subject: "000777.every.1")
        secrets.append(apple)
        _ = keep(world.run("link-provider", ["provider": "apple", "idToken": .string(apple), "accessToken": .string(accessToken)]))
        _ = keep(world.run("link-provider", ["provider": "apple", "action": "unlink", "accessToken": .string(accessToken)]))
        _ = keep(world.run("sessions", ["accessToken": .string(accessToken)]))
        let second = try #require(keep(world.run("signin", ["provider": "google", "idToken": .string(google)])))
        _ = keep(world.run("sessions", ["action": "revoke", "sessionId": second["session"]!["id"]!, "accessToken": .string(accessToken)]))
        _ = keep(world.run("otp-start", ["email": "every@example.com"]))
        let code = try #require(Outbox.latestCode(to: "every@example.com", in: world.directory + "/outbox"))
        secrets.append("\"\(code)\"")
        _ = keep(world.run("signin", ["provider": "email", "email": "every@example.com", "code": .string(code)]))
        let guestEvent: JSONValue = ["version": "2.0", "rawPath": "/auth/signin", "headers": ["content-type": "application/json"],
                                     "requestContext": ["http": ["method": "POST", "path": "/auth/signin", "sourceIp": "198.51.100.4"]],
                                     "body": .string(JSONValue.object(["provider": "guest"]).serialized()), "isBase64Encoded": false]
        let guest = try #require(keep(world.run("signin", guestEvent)))
        _ = keep(world.run("signin", guestEvent))
        let upgrade = world.googleToken(subject: "every-event-guest", email: nil)
        secrets.append(upgrade)
        _ = keep(world.run("link-provider", ["provider": "google", "idToken": .string(upgrade), "accessToken": guest["tokens"]!["accessToken"]!]))
        let notification = AppleNotificationTests.payload(world, type: "email-disabled", subject: "000999.nobody", jti: "every-1")
        secrets.append(notification)
        _ = keep(world.run("apple-notifications", ["payload": .string(notification)]))
        _ = keep(world.run("well-known", ["document": "jwks"]))
        _ = keep(world.run("signout", ["refreshToken": .string(try #require(second.path("tokens.refreshToken")))]))
        // Reuse: the first refresh token again, past the grace period.
        _ = keep(world.run("refresh", ["refreshToken": .string(firstRefresh)], environment: ["AUTH_NOW": String(world.now + 600)]))
        // The upgraded guest's account, whose session is still young enough to need no proof.
        _ = keep(world.run("delete-account", ["accessToken": guest["tokens"]!["accessToken"]!]))

        let lines = world.logs.flatMap { $0.split(separator: "\n") }.map(String.init)
        let events = Set(lines.compactMap { try? JSONValue.parse(Array($0.utf8)) }.compactMap { $0["event"]?.stringValue })
        let expected: Set<String> = ["signin", "refresh", "identity_linked", "identity_unlinked", "sessions", "session_revoked", "code_sent",
                                     "rate_limited", "guest_upgraded", "apple_notification", "well_known", "signout",
                                     "refresh_reuse_detected", "account_deleted"]
        #expect(expected.subtracting(events).isEmpty, "events never produced: \(expected.subtracting(events).sorted())")
        let text = lines.joined(separator: "\n")
        for secret in secrets where secret.count >= 8 {
            #expect(!text.contains(secret), "a secret reached the logs: \(secret.prefix(10))…")
            for part in secret.split(separator: ".") where part.count >= 24 { #expect(!text.contains(part)) }
        }
    }
}

extension JSONValue {
    func path(_ dotted: String) -> String? {
        var current: JSONValue? = self
        for component in dotted.split(separator: ".") { current = current?[String(component)] }
        return current?.stringValue
    }
}
