import LambdaAuth
import LambdaAuthTestSupport
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
        let weak = JSONWebKey.rsaJWK(TestKeys.weakRSA.publicKey, keyID: "weak")
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(weak, for: .rs256) }
    }

    @Test func aKeySetKeepsOnlyUsableKeysWithAKeyID() throws {
        let other = TestIssuer(keyIndex: 1, keyID: "other")
        let document = TestJWKS.document([
            issuer.jwk, jwk(["kid": "enc", "use": "enc"]), jwk(["kid": nil]), other.jwk,
            JSONWebKey.rsaJWK(TestKeys.weakRSA.publicKey, keyID: "weak"), "not an object",
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

    @Test func theKeyIDOfTheDevProviderIsTheRFC7638Thumbprint() {
        // RFC 7638 §3.1 example key and its thumbprint.
        let example: JSONValue = [
            "kty": "RSA", "e": "AQAB",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        ]
        let key = try? JSONWebKey(example, for: .rs256)
        guard case .rsa(let publicKey)? = key?.material else {
            Issue.record("the RFC 7638 key did not parse")
            return
        }
        #expect(JSONWebKey.rsaThumbprint(publicKey) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }
}
