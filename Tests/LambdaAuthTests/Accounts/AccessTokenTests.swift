import Crypto
import LambdaAuth
import Testing

@Suite struct AccessTokenTests {
    let issuer = AccessTokenIssuer(key: AccessTokenKey(privateKey: P256.Signing.PrivateKey()), issuer: "lambda-auth", lifetime: 900)

    @Test func issuesVerifiableES256Tokens() throws {
        let token = try issuer.issue(userID: "u1", sessionID: "s1", now: 1_000, random: SystemRandomSource())
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        let header = try JSONValue.parse(Base64.urlDecoded(parts[0])!)
        #expect(header["alg"] == "ES256")
        #expect(header["kid"]?.stringValue == issuer.key.keyID)
        let claims = try issuer.verify(token, now: 1_899)
        #expect(claims.userID == "u1" && claims.sessionID == "s1" && claims.expiresAt == 1_900 && claims.issuedAt == 1_000)
    }

    @Test func issuesVerifiableRS256TokensWithAnRSAKey() throws {
        let rsa = AccessTokenIssuer(key: .generate(.rs256), issuer: "lambda-auth", lifetime: 900)
        let token = try rsa.issue(userID: "u1", sessionID: "s1", now: 1_000, random: SystemRandomSource())
        let header = try JSONValue.parse(Base64.urlDecoded(token.split(separator: ".")[0])!)
        #expect(header["alg"] == "RS256" && header["kid"]?.stringValue == rsa.key.keyID && header["typ"] == "JWT")
        #expect(try rsa.verify(token, now: 1_899).userID == "u1")
        #expect(rsa.key.publicJWK["kty"] == "RSA" && rsa.key.publicJWK["alg"] == "RS256" && rsa.key.publicJWK["use"] == "sig")
        #expect(throws: AuthError.self) { try issuer.verify(token, now: 1_100) }
    }

    @Test func refusesATokenIssuedInTheFuture() throws {
        let token = try issuer.issue(userID: "u1", sessionID: "s1", now: 1_000, random: SystemRandomSource())
        #expect(try issuer.verify(token, now: 1_000).issuedAt == 1_000)
        // No skew for our own tokens: one second early is a token from a clock that is not ours.
        let early = #expect(throws: AuthError.self) { try issuer.verify(token, now: 999) }
        #expect(early?.code == .accessTokenInvalid && early?.message == "the access token was issued in the future")
    }

    @Test func refusesExpiredTamperedAndForeignTokens() throws {
        let token = try issuer.issue(userID: "u1", sessionID: "s1", now: 1_000, random: SystemRandomSource())
        func code(_ candidate: String, now: Int64 = 1_100) -> ErrorCode? {
            do {
                _ = try issuer.verify(candidate, now: now)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(token, now: 1_900) == .accessTokenInvalid)
        let parts = token.split(separator: ".").map(String.init)
        let otherClaims = Base64.urlEncoded(JSONValue.object(["iss": "lambda-auth", "sub": "u2", "sid": "s1", "iat": 1000, "exp": 9999, "jti": "x"]).serializedBytes())
        #expect(code(parts[0] + "." + otherClaims + "." + parts[2]) == .accessTokenInvalid)
        let foreign = AccessTokenIssuer(key: AccessTokenKey(privateKey: P256.Signing.PrivateKey()), issuer: "lambda-auth", lifetime: 900)
        #expect(code(try foreign.issue(userID: "u1", sessionID: "s1", now: 1_000, random: SystemRandomSource())) == .accessTokenInvalid)
        let otherIssuer = AccessTokenIssuer(key: issuer.key, issuer: "someone-else", lifetime: 900)
        #expect(code(try otherIssuer.issue(userID: "u1", sessionID: "s1", now: 1_000, random: SystemRandomSource())) == .accessTokenInvalid)
        #expect(code("not.a.token") == .accessTokenInvalid)
        #expect(code("") == .accessTokenInvalid)
    }

    @Test func keyIDIsTheRFC7638Thumbprint() throws {
        // RFC 7638 §3.1's example is RSA; for EC we check the definition directly: the SHA-256 of
        // the required members in lexicographic order, without whitespace.
        let jwk = issuer.key.publicJWK
        let canonical = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(jwk["x"]!.stringValue!)\",\"y\":\"\(jwk["y"]!.stringValue!)\"}"
        #expect(issuer.key.keyID == Base64.urlEncoded(SHA256.hash(data: Array(canonical.utf8))))
        #expect(jwk["alg"] == "ES256" && jwk["use"] == "sig")
    }

    @Test func loadsPEMKeysAndRefusesGarbage() throws {
        let key = P256.Signing.PrivateKey()
        #expect(try AccessTokenKeySet.parse(pem: key.pemRepresentation, variable: "AUTH_SIGNING_KEY").keys.map(\.keyID)
            == [AccessTokenKey(privateKey: key).keyID])
        let garbage = #expect(throws: AuthError.self) {
            try AccessTokenKeySet.parse(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", variable: "AUTH_SIGNING_KEY")
        }
        #expect(garbage?.description == "CONFIG_ERROR: AUTH_SIGNING_KEY: key 1 of 1 is neither an RSA nor a P-256 private key")
    }
}
