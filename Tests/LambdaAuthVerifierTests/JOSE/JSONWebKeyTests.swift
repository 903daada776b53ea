import Crypto
import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

@Suite struct JSONWebKeyTests {
    let issuer = TestIssuer()

    func jwk(_ changes: [String: JSONValue?]) -> JSONValue {
        var members = issuer.jwk.objectValue!
        for (name, value) in changes { members[name] = value }
        return .object(members)
    }

    @Test func readsAnRSAKeyThatVerifiesItsOwnTokens() throws {
        let key = try JSONWebKey(issuer.jwk, for: .rs256)
        #expect(key.keyID == issuer.keyID)
        #expect(key.algorithm == .rs256)
        let jws = try CompactJWS(parsing: issuer.token(issuer.claims()))
        #expect(key.isValidSignature(jws.signature, for: jws.signingInput))
        #expect(!key.isValidSignature(jws.signature, for: jws.signingInput + [0x20]))
        try jws.verifySignature(with: key)
    }

    @Test func keysWithoutUseAlgOrKeyOpsAreAccepted() throws {
        _ = try JSONWebKey(jwk(["use": nil, "alg": nil]), for: .rs256)
        _ = try JSONWebKey(jwk(["key_ops": ["verify"]]), for: .rs256)
    }

    @Test(arguments: [
        ["kty": "EC"], ["kty": nil], ["use": "enc"], ["alg": "RS384"], ["alg": "PS256"], ["alg": "none"],
        ["key_ops": ["encrypt"]], ["key_ops": "verify"], ["n": nil], ["e": nil], ["n": "not base64url!"],
        ["n": ""], ["n": 5], ["kid": 7],
    ] as [[String: JSONValue?]])
    func keysThatDoNotFitRS256SignaturesAreRefused(_ changes: [String: JSONValue?]) {
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(jwk(changes), for: .rs256) }
    }

    @Test func keysShorterThan2048BitsAreRefused() {
        let weak = JSONWebKey(keyID: "weak", material: .rsa(TestKeys.weakRSA.publicKey)).publicJWK
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(weak, for: .rs256) }
    }

    @Test func aKeySetKeepsOnlyUsableKeysWithAKeyID() throws {
        let other = TestIssuer(keyIndex: 1, keyID: "other")
        let document = TestJWKS.document([
            issuer.jwk, jwk(["kid": "enc", "use": "enc"]), jwk(["kid": nil]), other.jwk,
            JSONWebKey(keyID: "weak", material: .rsa(TestKeys.weakRSA.publicKey)).publicJWK, "not an object",
        ])
        let set = try JSONWebKeySet(parsing: document.serializedBytes(), algorithm: .rs256)
        #expect(Set(set.keys.keys) == [issuer.keyID, "other"])
        #expect(set.ignoredCount == 4)
    }

    @Test func aKeySetWithoutUsableKeysIsUnusable() {
        for document in ["", "[]", #"{"keys":{}}"#, #"{"keys":[]}"#, #"{"nokeys":[]}"#,
                         TestJWKS.document([jwk(["use": "enc"])]).serialized()] {
            #expect(throws: JSONWebKeySet.Unusable.self) {
                try JSONWebKeySet(parsing: Array(document.utf8), algorithm: .rs256)
            }
        }
    }

    @Test func theThumbprintOfAnRSAKeyIsRFC7638s() {
        // RFC 7638 §3.1 example key and its thumbprint.
        let example: JSONValue = [
            "kty": "RSA", "e": "AQAB",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        ]
        let key = try? JSONWebKey(example, for: .rs256)
        #expect(key?.material.thumbprint == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    @Test func theThumbprintOfAP256KeyHashesItsRequiredMembersInOrder() throws {
        // RFC 7638 gives no EC example; this is the definition (§3.2: crv, kty, x, y, no whitespace),
        // on RFC 7515 appendix A.3's key.
        let key = try JSONWebKey(JSONValue.parse(RFC7515Vectors.es256JWK), for: .es256)
        let canonical = #"{"crv":"P-256","kty":"EC","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#
        #expect(key.material.thumbprint == Base64.urlEncoded(SHA256.hash(data: Array(canonical.utf8))))
    }

    @Test func ourKeysAreThumbprintedAndPublishedTheSameWay() throws {
        let devProvider = DevIdentityProvider(privateKey: TestKeys.rsa(0))
        let published = try JSONWebKeySet(devProvider.jwks, algorithm: .rs256)
        #expect(devProvider.keyID == JSONWebKey.Material.rsa(TestKeys.rsa(0).publicKey).thumbprint)
        #expect(published.key(id: devProvider.keyID)?.material.thumbprint == devProvider.keyID)

        for algorithm in [JWSAlgorithm.rs256, .es256] {
            let accessKey = AccessTokenKey.generate(algorithm)
            let readBack = try JSONWebKey(accessKey.publicJWK, for: algorithm)
            #expect(readBack.keyID == accessKey.keyID && readBack.material.thumbprint == accessKey.keyID)
            #expect(accessKey.publicJWK["use"] == "sig" && accessKey.publicJWK["alg"] == .string(algorithm.rawValue))
        }
        #expect(devProvider.jwks["keys"]?.arrayValue?.first?["alg"] == "RS256")
    }

    @Test func aSetReadForTwoAlgorithmsKeepsEachKeyToItsOwn() throws {
        let rsa = AccessTokenKey.generate(.rs256), ec = AccessTokenKey.generate(.es256)
        let document: JSONValue = ["keys": [rsa.publicJWK, ec.publicJWK]]
        let both = try JSONWebKeySet(document, algorithms: [.rs256, .es256])
        #expect(both.key(id: rsa.keyID)?.algorithm == .rs256 && both.key(id: ec.keyID)?.algorithm == .es256)
        #expect(both.ignoredCount == 0)
        let rsaOnly = try JSONWebKeySet(document, algorithms: [.rs256])
        #expect(rsaOnly.key(id: ec.keyID) == nil && rsaOnly.ignoredCount == 1)
    }
}
