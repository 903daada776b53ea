import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// The `authorizer` (contract section 20) against API Gateway's documented request and response
/// formats (the samples in Events/authorizer/), and its verdicts against two verifiers nobody
/// here wrote (Tests/Scripts/jwt_authorizer.py: API Gateway's JWT authorizer rules step by step,
/// and PyJWT) on the same tokens.
@Suite struct AuthorizerEventTests {
    static let issuer = APIGatewayAuthorizerTests.issuer
    static let audience = "example-api"
    static let key = AccessTokenKey.generate(.rs256)

    static func world() -> FlowWorld {
        FlowWorld(["AUTH_SIGNING_KEY": "", "AUTH_SIGNING_KEYS": key.pemRepresentation, "AUTH_ISSUER": issuer,
                   "AUTH_ACCESS_TOKEN_AUDIENCE": audience])
    }

    static func sample(_ name: String, token: String) throws -> [UInt8] {
        let text = String(decoding: try FileSystem.readFile(TestSupport.packageRoot + "/Events/authorizer/\(name).json", limit: 1 << 16),
                          as: UTF8.self)
        return Array(text.replacing("ACCESS_TOKEN", with: token).utf8)
    }

    static func signIn(_ world: FlowWorld, _ subject: String) throws -> (token: String, userID: String, sessionID: String) {
        let body = world.signIn(token: world.googleToken(subject: subject))
        return (try #require(body["tokens"]?["accessToken"]?.stringValue), try #require(body["user"]?["id"]?.stringValue),
                try #require(body["session"]?["id"]?.stringValue))
    }

    @Test func answersInTheShapesAPIGatewayDocuments() throws {
        let world = Self.world()
        let (token, userID, sessionID) = try Self.signIn(world, "shapes")
        // `aal`: how the session was proven (contract sections 20 and 21), in every token now.
        let context: JSONValue = ["sub": .string(userID), "sid": .string(sessionID), "aal": "aal1"]

        // HTTP API, payload 2.0, simple responses: exactly isAuthorized and context.
        let http = world.run("authorizer", raw: try Self.sample("http-api-v2-request", token: token))
        #expect(http.responseBody == ["isAuthorized": true, "context": context], "\(http.stdoutText)")
        // REST, TOKEN and REQUEST: an IAM policy on the methodArn, principalId the user.
        let arn = "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/GET/orders/42"
        let allow: JSONValue = ["principalId": .string(userID), "context": context,
                                "policyDocument": ["Version": "2012-10-17",
                                                   "Statement": [["Action": "execute-api:Invoke", "Effect": "Allow", "Resource": .string(arn)]]]]
        for name in ["rest-token", "rest-request"] {
            let rest = world.run("authorizer", raw: try Self.sample(name, token: token))
            #expect(rest.responseBody == allow, "\(name): \(rest.stdoutText)")
        }

        // Signed out: refused in each shape, and the event line says why.
        #expect(world.run("signout", ["accessToken": .string(token)]).errorCode == nil)
        let refused = world.run("authorizer", raw: try Self.sample("http-api-v2-request", token: token))
        #expect(refused.responseBody == ["isAuthorized": false])
        #expect(refused.stderrText.contains("\"event\":\"authorizer_failed\"") && refused.stderrText.contains("ACCESS_TOKEN_REVOKED"),
                "\(refused.stderrText.suffix(600))")
        for name in ["rest-token", "rest-request"] {
            let rest = world.run("authorizer", raw: try Self.sample(name, token: token))
            #expect(rest.responseBody?["policyDocument"]?["Statement"]?.arrayValue?.first?["Effect"] == "Deny", "\(name)")
            #expect(rest.responseBody?["context"] == nil)
        }
        // A garbage token, and any other event: refused, not allowed.
        #expect(world.run("authorizer", raw: try Self.sample("rest-token", token: "garbage")).responseBody?["policyDocument"]?["Statement"]?.arrayValue?.first?["Effect"] == "Deny")
        #expect(world.run("authorizer", ["accessToken": .string(token)]).errorCode == "INVALID_REQUEST")
    }

    /// On every token that is not revoked, our verdict is the documented JWT authorizer's (and,
    /// for RSA tokens, PyJWT's): the `lambda` authorizer is the `jwt` one plus revocation.
    @Test func agreesWithTheDocumentedRulesAndPyJWTOnTokensNotRevoked() throws {
        let world = Self.world()
        let (good, userID, sessionID) = try Self.signIn(world, "verdicts")
        let now = world.now
        func forge(_ changes: [String: JSONValue?], key: AccessTokenKey = Self.key) throws -> String {
            var claims: [String: JSONValue] = ["iss": .string(Self.issuer), "aud": .string(Self.audience), "sub": .string(userID),
                                               "sid": .string(sessionID), "iat": .number(now - 10), "exp": .number(now + 600), "jti": "j"]
            for (name, value) in changes { claims[name] = value }
            return try JSONWebToken.sign(claims, key: key)
        }
        let tokens = [
            good,
            try forge(["exp": .number(now)]),
            try forge(["iat": .number(now + 1)]),
            try forge(["nbf": .number(now + 5)]),
            try forge(["aud": "another-api"]),
            try forge(["aud": nil, "client_id": .string(Self.audience)]),
            try forge(["aud": ["x", .string(Self.audience)]]),
            try forge(["iss": "https://elsewhere.example"]),
            try forge([:], key: AccessTokenKey.generate(.rs256)),
        ]
        let (verdicts, _) = try APIGatewayAuthorizerTests.verdicts(world, tokens, audiences: [Self.audience],
                                                                  environment: [:])
        try #require(verdicts.count == tokens.count)
        for (index, token) in tokens.enumerated() {
            let ours = world.run("authorizer", raw: try Self.sample("rest-token", token: token))
            let effect = ours.responseBody?["policyDocument"]?["Statement"]?.arrayValue?.first?["Effect"]?.stringValue
            #expect((effect == "Allow") == (verdicts[index].authorizer == "ok"), "token \(index): ours \(effect ?? "?"), \(verdicts[index])")
            // PyJWT reads client_id as nothing; elsewhere it agrees with the documented rules on RSA tokens.
            if index != 5 {
                #expect((effect == "Allow") == (verdicts[index].pyjwt == "ok"), "token \(index): ours \(effect ?? "?"), \(verdicts[index])")
            }
        }
    }
}

extension JSONWebToken {
    /// A token with exactly `claims`, as our issuer would sign it.
    static func sign(_ claims: [String: JSONValue], key: AccessTokenKey) throws -> String {
        try JWSSigner.sign(header: ["typ": "JWT"], payload: claims, keyID: key.keyID, key: key.signingKey)
    }
}
