import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// The algorithms a configured OpenID Connect provider may use (contract section 14): each signs
/// and verifies through the same path, a key declaring `alg` verifies that algorithm only, and a
/// key without `alg` verifies every requested algorithm its `kty` and `crv` allow.
@Suite struct JOSEAlgorithmTests {
    static let rsa = JWSSigningKey.rsa(TestKeys.rsa(0))

    static func key(for algorithm: JWSAlgorithm) throws -> JWSSigningKey {
        algorithm.keyType == "RSA" ? rsa : try JWSSigningKey.generate(algorithm)
    }

    /// The published JWK of `key`, with `alg` set to `declared` (nil: no `alg` member).
    static func jwk(_ key: JWSSigningKey, kid: String = "k1", declared: JWSAlgorithm?) -> JSONValue {
        var members = JSONWebKey(keyID: kid, material: key.publicMaterial).publicJWK.objectValue!
        members["alg"] = declared.map { .string($0.rawValue) }
        return .object(members)
    }

    @Test(arguments: JWSAlgorithm.allCases)
    func eachAlgorithmSignsAndVerifiesThroughAJWKS(_ algorithm: JWSAlgorithm) throws {
        let signer = try Self.key(for: algorithm)
        let token = try JWSSigner.sign(payload: ["sub": "1"], keyID: "k1", key: signer, algorithm: algorithm)
        let jws = try CompactJWS(parsing: token)
        #expect(jws.algorithm == algorithm.rawValue)
        let set = try JSONWebKeySet(["keys": [Self.jwk(signer, declared: algorithm)]], algorithms: [algorithm])
        let key = try #require(set.key(id: "k1"))
        #expect(key.algorithms == [algorithm])
        try jws.verifySignature(with: key)

        // One flipped bit of the signature, or of the signed bytes, is refused.
        var forged = jws.signature
        forged[forged.count / 2] ^= 0x01
        #expect(!key.isValidSignature(forged, for: jws.signingInput, algorithm: algorithm))
        #expect(!key.isValidSignature(jws.signature, for: jws.signingInput + [0x20], algorithm: algorithm))
    }

    /// PS256 and RS256 with the same RSA key are different signatures: neither verifies as the other.
    @Test func pssAndPKCS1SignaturesOfOneKeyAreNotInterchangeable() throws {
        let jwk = Self.jwk(Self.rsa, declared: nil)
        let key = try JSONWebKey(jwk, forAnyOf: [.rs256, .ps256, .rs384, .ps512])
        #expect(key.algorithms == [.rs256, .ps256, .rs384, .ps512])
        for (signed, other) in [(JWSAlgorithm.ps256, JWSAlgorithm.rs256), (.rs256, .ps256), (.rs384, .ps512)] {
            let jws = try CompactJWS(parsing: JWSSigner.sign(payload: [:], keyID: "k1", key: Self.rsa, algorithm: signed))
            #expect(key.isValidSignature(jws.signature, for: jws.signingInput, algorithm: signed))
            #expect(!key.isValidSignature(jws.signature, for: jws.signingInput, algorithm: other))
            try jws.verifySignature(with: key)
        }
    }

    @Test func aKeyWithoutAlgServesEveryAlgorithmOfItsTypeAndNoOther() throws {
        let ed25519 = try JWSSigningKey.generate(.edDSA)
        let p384 = try JWSSigningKey.generate(.es384)
        let requested: [JWSAlgorithm] = [.rs256, .ps256, .es256, .es384, .edDSA]
        #expect(try JSONWebKey(Self.jwk(Self.rsa, declared: nil), forAnyOf: requested).algorithms == [.rs256, .ps256])
        #expect(try JSONWebKey(Self.jwk(ed25519, declared: nil), forAnyOf: requested).algorithms == [.edDSA])
        // A P-384 key is never read for ES256: the curve decides.
        #expect(try JSONWebKey(Self.jwk(p384, declared: nil), forAnyOf: requested).algorithms == [.es384])
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(Self.jwk(p384, declared: nil), forAnyOf: [.es256]) }
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(Self.jwk(ed25519, declared: nil), forAnyOf: [.rs256, .es256]) }
    }

    /// A JWK's `alg`, when present, must equal the token's: an RSA key declared RS256 does not
    /// verify the same key's PS256 signature, and a key declaring an algorithm the provider does
    /// not allow is not used at all.
    @Test func aDeclaredAlgIsTheOnlyOneTheKeyVerifies() throws {
        let key = try JSONWebKey(Self.jwk(Self.rsa, declared: .rs256), forAnyOf: [.rs256, .ps256])
        #expect(key.algorithms == [.rs256])
        let pss = try CompactJWS(parsing: JWSSigner.sign(payload: [:], keyID: "k1", key: Self.rsa, algorithm: .ps256))
        #expect(throws: AuthError.self) { try pss.verifySignature(with: key) }
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(Self.jwk(Self.rsa, declared: .rs512), forAnyOf: [.rs256, .ps256]) }
        // An `alg` of another key type is refused, not reinterpreted.
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(Self.jwk(Self.rsa, declared: .es256), forAnyOf: [.rs256, .es256]) }
    }

    @Test(arguments: [
        ["crv": "P-256"], ["crv": nil], ["crv": "Ed448"], ["kty": "EC"], ["x": nil], ["x": "AAAA"], ["use": "enc"],
        ["key_ops": ["sign"]],
    ] as [[String: JSONValue?]])
    func malformedEd25519KeysAreRefused(_ changes: [String: JSONValue?]) throws {
        var members = Self.jwk(try JWSSigningKey.generate(.edDSA), declared: .edDSA).objectValue!
        for (name, value) in changes { members[name] = value }
        #expect(throws: JSONWebKey.Unusable.self) { try JSONWebKey(.object(members), forAnyOf: [.edDSA, .es256]) }
    }

    @Test func aKeyCannotSignAnAlgorithmOfAnotherType() throws {
        #expect(throws: JWSSigner.Mismatch.self) {
            try JWSSigner.sign(payload: [:], keyID: nil, key: Self.rsa, algorithm: .es256)
        }
        #expect(throws: JWSSigner.Mismatch.self) {
            try JWSSigner.sign(payload: [:], keyID: nil, key: JWSSigningKey.generate(.es256), algorithm: .es384)
        }
    }

    /// RFC 8037 Appendix A.3: the thumbprint of its example Ed25519 key.
    @Test func ed25519ThumbprintIsRFC8037s() throws {
        let jwk: JSONValue = ["kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"]
        let key = try JSONWebKey(jwk, for: .edDSA)
        #expect(key.material.thumbprint == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
    }

    /// A P-384 thumbprint hashes crv, kty, x and y (RFC 7638 §3.2), and a key read back from its
    /// published JWK has the same one.
    @Test func p384ThumbprintIsStableThroughItsJWK() throws {
        let signer = try JWSSigningKey.generate(.es384)
        let published = JSONWebKey(keyID: "p", material: signer.publicMaterial).publicJWK
        #expect(published["crv"] == "P-384")
        #expect(published["alg"] == "ES384")
        let read = try JSONWebKey(published, for: .es384)
        #expect(read.material.thumbprint == signer.publicMaterial.thumbprint)
        #expect(read.material.thumbprint != (try JWSSigningKey.generate(.es384)).publicMaterial.thumbprint)
    }
}
