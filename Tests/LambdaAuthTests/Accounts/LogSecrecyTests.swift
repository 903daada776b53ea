import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// No ID token, access token, refresh token, credential or key may reach a log line or an error
/// message, on success paths and failure paths alike (debug logging on).
@Suite struct LogSecrecyTests {
    @Test func noSecretInAnyLogLine() throws {
        let world = FlowWorld(["AUTH_CREDENTIALS_SECRET": "log-secrecy-master-secret-0123456789"])
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
}

extension JSONValue {
    func path(_ dotted: String) -> String? {
        var current: JSONValue? = self
        for component in dotted.split(separator: ".") { current = current?[String(component)] }
        return current?.stringValue
    }
}
