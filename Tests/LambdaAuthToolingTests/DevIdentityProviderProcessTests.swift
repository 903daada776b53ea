import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `authctl dev-idp` and `signin`, run as the processes a developer runs.
final class DevIdentityProviderProcessTests {
    let directory = TestSupport.temporaryDirectory()
    var idpDirectory: String { directory + "/idp" }

    deinit { TestSupport.removeTree(directory) }

    func authctl(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessRunner.Output {
        try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: environment)
    }

    var jwksURL: String { "file://" + DevIdentityProvider.jwksPath(in: idpDirectory) }

    func mint(_ arguments: [String]) throws -> String {
        let output = try authctl(["dev-idp", "token", "--dir", idpDirectory] + arguments,
                                 environment: ["AUTH_GOOGLE_AUDIENCES": "other-client," + TestIssuer.googleAudience])
        #expect(output.exitCode == 0, "\(output.stderrText)")
        return output.stdoutText.trimmingCharacters(in: "\n")
    }

    @Test func initCreatesAPrivateKeyOnceAndWritesItsJWKS() throws {
        let first = try authctl(["dev-idp", "init", "--dir", idpDirectory])
        #expect(first.exitCode == 0)
        #expect(first.stdoutText.contains("created"))
        let keyPath = DevIdentityProvider.keyPath(in: idpDirectory)
        var status = stat()
        #expect(stat(keyPath, &status) == 0 && status.st_mode & 0o777 == 0o600)
        let pem = try FileSystem.readFile(keyPath)
        #expect(String(decoding: pem, as: UTF8.self).hasPrefix("-----BEGIN RSA PRIVATE KEY-----")
            || String(decoding: pem, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let second = try authctl(["dev-idp", "init", "--dir", idpDirectory])
        #expect(second.exitCode == 0 && second.stdoutText.contains("kept"))
        #expect(try FileSystem.readFile(keyPath) == pem)

        let printed = try authctl(["dev-idp", "jwks", "--dir", idpDirectory])
        let jwks = try JSONValue.parse(printed.stdoutText)
        #expect(try JSONValue.parse(FileSystem.readFile(DevIdentityProvider.jwksPath(in: idpDirectory))) == jwks)
        let key = try JSONWebKeySet(jwks, algorithm: .rs256)
        #expect(key.keys.count == 1)
        #expect(jwks["keys"]?.arrayValue?.first?["d"] == nil)  // public members only
    }

    @Test func mintedTokensVerifyAsGoogleAndAppleTokens() throws {
        #expect(try authctl(["dev-idp", "init", "--dir", idpDirectory]).exitCode == 0)
        let configuration = try AuthConfiguration.fromEnvironment(
            VerifierEnvironment.make(googleJWKS: jwksURL, cacheDirectory: directory))
        let verifier = IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                                       httpClient: CurlHTTPClient(), clock: SystemClock(),
                                       logger: CapturedLog().logger)

        let google = try mint(["--provider", "google", "--sub", "g-1", "--email", "a@example.com", "--name", "Ann",
                               "--aud", TestIssuer.googleAudience, "--nonce", "n1"])
        let identity = try verifier.verify(google, provider: .google, nonce: "n1")
        #expect(identity.subject == "g-1" && identity.email == "a@example.com" && identity.emailVerified && identity.name == "Ann")

        let apple = try mint(["--provider", "apple", "--sub", "a-1", "--email", "x@privaterelay.appleid.com", "--private-email",
                              "--email-verified", "false", "--aud", TestIssuer.appleAudience])
        let appleIdentity = try verifier.verify(apple, provider: .apple, nonce: nil)
        #expect(appleIdentity.claims["email_verified"] == "false" && appleIdentity.claims["is_private_email"] == "true")
        #expect(!appleIdentity.emailVerified && appleIdentity.isPrivateEmail)

        // --aud defaults to the configured audience; --expires-in and --iat shape the times.
        let expired = try mint(["--provider", "google", "--sub", "g-2", "--expires-in", "-120"])
        #expect(throws: AuthError.self) { try verifier.verify(expired, provider: .google, nonce: nil) }
        let issued = try JSONWebToken(parsing: mint(["--provider", "google", "--sub", "g-3", "--iat", "2026-01-01T00:00:00Z",
                                                     "--aud", "x"]))
        #expect(issued.claims["iat"] == 1_767_225_600 && issued.claims["exp"] == 1_767_229_200)
    }

    @Test func tokenRefusesBadArgumentsClearly() throws {
        #expect(try authctl(["dev-idp", "init", "--dir", idpDirectory]).exitCode == 0)
        for arguments in [["--sub", "1"], ["--provider", "facebook", "--sub", "1"], ["--provider", "google"],
                          ["--provider", "google", "--sub", "1", "--aud", "a", "--email-verified", "maybe"],
                          ["--provider", "google", "--sub", "1", "--aud", "a", "--expires-in", "soon"]] {
            let output = try authctl(["dev-idp", "token", "--dir", idpDirectory] + arguments)
            #expect(output.exitCode != 0 && !output.stderrText.isEmpty, "\(arguments)")
            #expect(output.stdout.isEmpty)
        }
        let noKey = try authctl(["dev-idp", "token", "--dir", directory + "/none", "--provider", "google", "--sub", "1", "--aud", "a"])
        #expect(noKey.exitCode != 0 && noKey.stderrText.contains("authctl dev-idp init"))
    }

    @Test func signinAnswersTheIdentityForAValidTokenAndTheContractErrorOtherwise() throws {
        #expect(try authctl(["dev-idp", "init", "--dir", idpDirectory]).exitCode == 0)
        let now = "1900000000"
        let environment = VerifierEnvironment.make(googleJWKS: jwksURL, cacheDirectory: directory,
                                                   extra: ["AUTH_TEST_MODE": "1", "AUTH_NOW": now, "AUTH_STORE": directory + "/store"])
        let valid = try mint(["--provider", "google", "--sub", "user-7", "--email", "u@example.com",
                              "--aud", TestIssuer.googleAudience, "--iat", now])
        func signin(_ body: JSONValue) throws -> ProcessRunner.Output {
            try ProcessRunner.run(ProcessRunner.executable("signin"), environment: environment, stdin: body.serializedBytes())
        }

        let accepted = try signin(["provider": "google", "idToken": .string(valid)])
        #expect(accepted.exitCode == 0)
        #expect(accepted.json?["user"]?["identities"]?.arrayValue?.first?["subject"] == "user-7")
        #expect(accepted.json?["user"]?["email"] == "u@example.com")
        #expect(accepted.json?["user"]?["emailVerified"] == true)

        let expired = try mint(["--provider", "google", "--sub", "user-7", "--aud", TestIssuer.googleAudience,
                                "--iat", "1800000000"])
        let refused = try signin(["provider": "google", "idToken": .string(expired)])
        #expect(refused.exitCode == 0)
        #expect(refused.json?["error"]?["code"] == "TOKEN_EXPIRED")
        #expect(refused.json?["error"]?["status"] == 401)
        #expect(refused.json?["error"]?["retryable"] == false)
        #expect(refused.json?["error"]?["message"] == "the ID token expired at 2027-01-15T09:00:00Z")
        #expect(!refused.stderrText.contains(expired.split(separator: ".")[2]))

        // The same through an HTTP API event: the status is the response's.
        let event: JSONValue = ["version": "2.0", "requestContext": ["http": ["method": "POST"]],
                                "body": .string(JSONValue.object(["provider": "apple", "idToken": .string(valid)]).serialized())]
        let http = try signin(event)
        #expect(http.json?["statusCode"] == 401)
        let body = try JSONValue.parse(http.json?["body"]?.stringValue ?? "")
        #expect(body["error"]?["code"] == "INVALID_ISSUER")

        #expect(try signin(["provider": "google"]).json?["error"]?["code"] == "INVALID_REQUEST")
        #expect(try signin(["provider": "yahoo", "idToken": "x"]).json?["error"]?["code"] == "UNSUPPORTED_PROVIDER")
        #expect(try signin(["provider": "google", "idToken": "x.y"]).json?["error"]?["code"] == "MALFORMED_TOKEN")
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
