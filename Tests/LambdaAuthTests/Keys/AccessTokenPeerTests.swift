import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Our access tokens as another service sees them: an independent verifier (Python joserfc on
/// `cryptography`, Tests/Scripts/verify_access_tokens.py) fetches the JWKS from the `well-known`
/// executable through an HTTP API event and checks tokens signed by each published key; a key
/// that is not published fails there and in every handler that checks a caller. Then a whole
/// rotation, each invocation reading the keys afresh as a new process does. Both backends.
@Suite struct AccessTokenPeerTests {
    static let issuer = "https://auth.example.test"
    static let audience = "example-api"

    static func pem(_ keys: AccessTokenKey...) -> String {
        keys.map(\.pemRepresentation).joined(separator: "\n")
    }

    /// A world whose handlers sign with `keys` (the backend's one AUTH_SIGNING_KEY set aside).
    static func world(_ backend: FlowWorld.Backend, keys: String) throws -> FlowWorld {
        try FlowWorld(["AUTH_SIGNING_KEY": "", "AUTH_SIGNING_KEYS": keys, "AUTH_ISSUER": issuer,
                       "AUTH_ACCESS_TOKEN_AUDIENCE": audience], backend: backend)
    }

    /// Signs a new user in with `keys` signing; returns the access token.
    static func accessToken(_ world: FlowWorld, subject: String, keys: String) throws -> String {
        let output = world.run("signin", ["provider": "google", "idToken": .string(world.googleToken(subject: subject))],
                               environment: ["AUTH_SIGNING_KEYS": keys])
        return try #require(output.responseBody?["tokens"]?["accessToken"]?.stringValue,
                            "sign-in failed: \(output.stdoutText) \(output.stderrText.suffix(400))")
    }

    static func keyID(of token: String) -> String? {
        token.split(separator: ".").first.flatMap { Base64.urlDecoded($0) }.flatMap { try? JSONValue.parse($0) }?["kid"]?.stringValue
    }

    /// The error code `handler` answers a caller presenting `token` with (nil: accepted).
    static func callerCheck(_ world: FlowWorld, _ handler: String, _ token: String, keys: String,
                            extra: [String: String] = [:]) -> String? {
        var event: [String: JSONValue] = ["accessToken": .string(token)]
        if handler == "link-provider" {
            event["provider"] = "apple"
            event["action"] = "unlink"
        }
        let output = world.run(handler, .object(event), environment: extra.merging(["AUTH_SIGNING_KEYS": keys]) { $1 })
        return output.errorCode
    }

    static let callerCheckingHandlers = ["sessions", "link-provider", "signout", "delete-account"]

    @Test(arguments: FlowWorld.Backend.allCases)
    func anIndependentVerifierAcceptsEveryPublishedKeyAndNoOther(_ backend: FlowWorld.Backend) throws {
        let (a, b, unpublished) = (AccessTokenKey.generate(.rs256), AccessTokenKey.generate(.es256), AccessTokenKey.generate(.rs256))
        let published = Self.pem(a, b)
        let world = try Self.world(backend, keys: published)
        let signedByA = try Self.accessToken(world, subject: "peer-a", keys: published)
        let signedByB = try Self.accessToken(world, subject: "peer-b", keys: Self.pem(b, a))
        let signedElsewhere = try Self.accessToken(world, subject: "peer-c", keys: Self.pem(unpublished))
        #expect([signedByA, signedByB, signedElsewhere].map(Self.keyID) == [a.keyID, b.keyID, unpublished.keyID])

        let directory = TestSupport.temporaryDirectory("peer")
        defer { TestSupport.removeTree(directory) }
        let input: JSONValue = ["issuer": .string(Self.issuer), "audience": .string(Self.audience), "now": .number(world.now),
                                "tokens": [.string(signedByA), .string(signedByB), .string(signedElsewhere)]]
        try FileSystem.writeAtomically(directory + "/input.json", input.serializedBytes())
        let script = TestSupport.scriptPath("verify_access_tokens.py")
        let output = try ProcessRunner.run("/usr/bin/env", arguments: ["python3", script, ProcessRunner.executable("well-known"),
                                                                       directory + "/input.json"],
                                           environment: world.environment)
        // No skip: without python3 and joserfc there is no independent verifier (prerequisites.sh installs it).
        try #require(output.exitCode == 0, "python3 \(script) failed (is joserfc installed?): \(output.stderrText.suffix(2000))")
        let answer = try #require(output.json, "not JSON: \(output.stdoutText)")
        #expect(answer["discovery"]?["issuer"] == .string(Self.issuer))
        #expect(answer["discovery"]?["jwks_uri"] == .string(Self.issuer + "/.well-known/jwks.json"))
        #expect(answer["discovery"]?["id_token_signing_alg_values_supported"] == ["RS256", "ES256"])
        #expect(answer["headers"]?["cache-control"] == "public, max-age=300")
        #expect(answer["jwks"]?["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } == [a.keyID, b.keyID])
        let results = try #require(answer["results"]?.arrayValue)
        try #require(results.count == 3)
        #expect(results[0]["valid"] == true && results[0]["kid"] == .string(a.keyID))
        #expect(results[1]["valid"] == true && results[1]["kid"] == .string(b.keyID))
        #expect(results[2]["valid"] == false, "joserfc accepted a token from an unpublished key: \(results[2].serialized())")

        for handler in Self.callerCheckingHandlers {
            #expect(Self.callerCheck(world, handler, signedElsewhere, keys: published) == "ACCESS_TOKEN_INVALID", "\(handler)")
        }
        #expect(Self.callerCheck(world, "sessions", signedByA, keys: published) == nil)
        #expect(Self.callerCheck(world, "sessions", signedByB, keys: published) == nil)
        // Our own handlers check `aud` too: a token meant for another API is not a caller here.
        for handler in Self.callerCheckingHandlers {
            #expect(Self.callerCheck(world, handler, signedByA, keys: published, extra: ["AUTH_ACCESS_TOKEN_AUDIENCE": "another-api"])
                == "ACCESS_TOKEN_INVALID", "\(handler)")
        }
    }

    /// docs/keys-and-secrets.md, "Key rotation", step by step: publish the new key second, sign with it, retire the
    /// old one. Tokens of both keys work until the old key leaves the list.
    @Test(arguments: FlowWorld.Backend.allCases)
    func tokensOfBothKeysWorkUntilTheOldKeyIsRetired(_ backend: FlowWorld.Backend) throws {
        // From ES256 to RS256, the move deployments made before RS256 need (contract section 13).
        let (old, new) = (AccessTokenKey.generate(.es256), AccessTokenKey.generate(.rs256))
        let world = try Self.world(backend, keys: Self.pem(old))
        let beforeRotation = try Self.accessToken(world, subject: "rotation-1", keys: Self.pem(old))

        let published = Self.pem(old, new)
        let jwks = world.run("well-known", ["document": "jwks"], environment: ["AUTH_SIGNING_KEYS": published])
        #expect(jwks.responseBody?["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } == [old.keyID, new.keyID])
        #expect(Self.callerCheck(world, "sessions", beforeRotation, keys: published) == nil)

        world.advanceClock(by: 300)
        let rotated = Self.pem(new, old)
        let afterRotation = try Self.accessToken(world, subject: "rotation-2", keys: rotated)
        #expect(Self.keyID(of: afterRotation) == new.keyID)
        #expect(Self.callerCheck(world, "sessions", beforeRotation, keys: rotated) == nil)
        #expect(Self.callerCheck(world, "sessions", afterRotation, keys: rotated) == nil)

        world.advanceClock(by: 60)
        let retired = Self.pem(new)
        #expect(Self.callerCheck(world, "sessions", beforeRotation, keys: retired) == "ACCESS_TOKEN_INVALID")
        #expect(Self.callerCheck(world, "link-provider", beforeRotation, keys: retired) == "ACCESS_TOKEN_INVALID")
        #expect(Self.callerCheck(world, "sessions", afterRotation, keys: retired) == nil)
    }
}
