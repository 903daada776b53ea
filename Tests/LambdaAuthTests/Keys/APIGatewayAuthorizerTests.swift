import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Our access tokens as two verifiers we did not write see them (Tests/Scripts/jwt_authorizer.py,
/// which fetches the JWKS through the `well-known` executable over loopback HTTP): API Gateway's
/// JWT authorizer by the rules AWS documents (RSA algorithms only), and PyJWT's PyJWKClient.
/// Contract section 13.
@Suite struct APIGatewayAuthorizerTests {
    static let issuer = "https://auth.example.test"

    struct Verdict: Equatable, CustomStringConvertible {
        var authorizer: String
        var pyjwt: String
        var description: String { "authorizer: \(authorizer), PyJWT: \(pyjwt)" }
    }

    /// Each token's verdicts, with `well-known` publishing what `environment` configures.
    static func verdicts(_ world: FlowWorld, _ tokens: [String], audiences: [String], at now: Int64? = nil,
                         environment: [String: String]) throws -> (results: [Verdict], answer: JSONValue) {
        let directory = TestSupport.temporaryDirectory("authorizer")
        defer { TestSupport.removeTree(directory) }
        let input: JSONValue = ["issuer": .string(issuer), "audiences": .array(audiences.map { .string($0) }),
                                "now": .number(now ?? world.now), "tokens": .array(tokens.map { .string($0) })]
        try FileSystem.writeAtomically(directory + "/input.json", input.serializedBytes())
        let answer = try TestSupport.pythonPeer("jwt_authorizer.py", [ProcessRunner.executable("well-known"), directory + "/input.json"],
                                                environment: world.environment.merging(environment) { $1 })
        let results = (answer["results"]?.arrayValue ?? []).map {
            Verdict(authorizer: $0["authorizer"]?.stringValue ?? "?", pyjwt: $0["pyjwt"]?.stringValue ?? "?")
        }
        return (results, answer)
    }

    static func accessToken(_ world: FlowWorld, subject: String, environment: [String: String]) throws -> String {
        let output = world.run("signin", ["provider": "google", "idToken": .string(world.googleToken(subject: subject))],
                               environment: environment)
        return try #require(output.responseBody?["tokens"]?["accessToken"]?.stringValue,
                            "sign-in failed: \(output.stdoutText) \(output.stderrText.suffix(400))")
    }

    /// The settings the template gives every function (its issuer, audience and required
    /// algorithm), with a key from `authctl keys generate` as an operator would make it.
    @Test func tokensIssuedUnderTheTemplatesSettingsPassTheAuthorizersRules() throws {
        let translated = try TemplateTranslationTests.translate(parameters: ["Issuer": .string(Self.issuer), "AccessTokenAudience": "example-api"])
        let template = try #require(translated["functions"]?["signin"]?["environment"])
        let audienceList = translated["authorizer"]?["audiences"]?.arrayValue ?? []
        let audiences = audienceList.compactMap(\.stringValue)
        try #require(audiences == ["example-api"], "the authorizer's audiences: \(audienceList)")
        var settings: [String: String] = ["AUTH_SIGNING_KEY": ""]
        for name in ["AUTH_ISSUER", "AUTH_ACCESS_TOKEN_AUDIENCE", "AUTH_SIGNING_ALGORITHM"] {
            settings[name] = try #require(template[name]?.stringValue, "the template sets no \(name)")
        }
        let generated = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["keys", "generate"])
        try #require(generated.exitCode == 0, "\(generated.stderrText)")
        #expect(generated.stdoutText.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"), "authctl keys generate makes RSA keys by default")
        settings["AUTH_SIGNING_KEYS"] = generated.stdoutText
        let world = FlowWorld(settings)

        let token = try Self.accessToken(world, subject: "authorizer-user", environment: [:])
        let esKey = AccessTokenKey.generate(.es256)
        let esToken = try Self.accessToken(world, subject: "authorizer-es", environment: [
            "AUTH_SIGNING_KEYS": esKey.pemRepresentation, "AUTH_SIGNING_ALGORITHM": ""])
        // The template's own setting refuses an ES256 signing key at start.
        let refused = world.run("signin", ["provider": "google", "idToken": .string(world.googleToken(subject: "x"))],
                                environment: ["AUTH_SIGNING_KEYS": esKey.pemRepresentation])
        #expect(refused.errorCode == "CONFIG_ERROR" && refused.stdoutText.contains("AUTH_SIGNING_ALGORITHM is RS256"))

        let now = world.now
        let published = ["AUTH_SIGNING_KEYS": settings["AUTH_SIGNING_KEYS"]! + "\n" + esKey.pemRepresentation]
        let (results, answer) = try Self.verdicts(world, [token, esToken], audiences: audiences, environment: published)
        #expect(answer["jwksURI"] == .string(Self.issuer + "/.well-known/jwks.json"))
        #expect(answer["algorithms"] == ["RS256", "ES256"])
        #expect(results == [Verdict(authorizer: "ok", pyjwt: "ok"),
                            Verdict(authorizer: "alg ES256 is not RSA-based", pyjwt: "ok")])

        // Across each time boundary the authorizer checks: exp (900 s), and iat before now.
        let late = try Self.verdicts(world, [token], audiences: audiences, at: now + 900, environment: published).results
        #expect(late == [Verdict(authorizer: "exp is not after now", pyjwt: "ExpiredSignatureError")])
        let early = try Self.verdicts(world, [token], audiences: audiences, at: now - 1, environment: published).results
        #expect(early == [Verdict(authorizer: "iat is not before now", pyjwt: "ImmatureSignatureError")])
        let otherAPI = try Self.verdicts(world, [token], audiences: ["another-api"], environment: published).results
        #expect(otherAPI == [Verdict(authorizer: "aud names no audience", pyjwt: "InvalidAudienceError")])
    }

    /// docs/keys-and-secrets.md, "Key rotation", from a P-256 key to an RSA key, with PyJWT as the resource server.
    @Test(arguments: FlowWorld.Backend.allCases)
    func pyJWTFollowsARotationFromES256ToRS256(_ backend: FlowWorld.Backend) throws {
        let (old, new) = (AccessTokenKey.generate(.es256), AccessTokenKey.generate(.rs256))
        let audience = "example-api"
        let world = try FlowWorld(["AUTH_SIGNING_KEY": "", "AUTH_ISSUER": Self.issuer, "AUTH_ACCESS_TOKEN_AUDIENCE": audience],
                                  backend: backend)
        func keys(_ list: AccessTokenKey...) -> [String: String] {
            ["AUTH_SIGNING_KEYS": list.map(\.pemRepresentation).joined(separator: "\n")]
        }
        let beforeRotation = try Self.accessToken(world, subject: "rotation-es", environment: keys(old))
        world.advanceClock(by: 300)
        let afterRotation = try Self.accessToken(world, subject: "rotation-rs", environment: keys(new, old))

        let both = try Self.verdicts(world, [beforeRotation, afterRotation], audiences: [audience], environment: keys(new, old))
        #expect(both.answer["algorithms"] == ["RS256", "ES256"])
        #expect(both.results == [Verdict(authorizer: "alg ES256 is not RSA-based", pyjwt: "ok"), Verdict(authorizer: "ok", pyjwt: "ok")])
        for token in [beforeRotation, afterRotation] {
            #expect(world.run("sessions", ["accessToken": .string(token)], environment: keys(new, old)).errorCode == nil)
        }

        world.advanceClock(by: 60)
        let retired = try Self.verdicts(world, [beforeRotation, afterRotation], audiences: [audience], environment: keys(new))
        #expect(retired.answer["algorithms"] == ["RS256"])
        #expect(retired.results.map(\.pyjwt) == ["PyJWKClientError", "ok"])
        #expect(world.run("sessions", ["accessToken": .string(beforeRotation)], environment: keys(new)).errorCode == "ACCESS_TOKEN_INVALID")
    }
}
