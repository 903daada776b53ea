import Crypto
import CryptoExtras
import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// `AUTH_SIGNING_KEYS` and its three other forms, and what a key set signs and accepts: the
/// configuration side of rotation. The processes' side is AccessTokenPeerTests.
@Suite struct AccessTokenKeySetTests {
    /// Mixed on purpose: a set may hold RSA and P-256 keys in any order (contract section 13).
    let first = AccessTokenKey.generate(.rs256)
    let second = AccessTokenKey.generate(.es256)

    func configuration(_ environment: [String: String]) throws(AuthError) -> AuthConfiguration {
        try AuthConfiguration.fromEnvironment(environment.merging(["AUTH_STORE": "/tmp/unused-store"]) { $1 })
    }

    func configError(_ environment: [String: String]) -> String? {
        do {
            _ = try configuration(environment)
            return nil
        } catch {
            return error.code == .configError ? error.message : "\(error.code): \(error.message)"
        }
    }

    @Test func concatenatedKeysKeepTheirOrderAndTheFirstSigns() throws {
        let pem = first.pemRepresentation + "\n" + second.pemRepresentation + "\n"
        let configured = try configuration(["AUTH_SIGNING_KEYS": pem])
        let keys = try #require(configured.signingKeys)
        #expect(keys.keys.map(\.keyID) == [first.keyID, second.keyID])
        #expect(keys.signing.keyID == first.keyID)
        #expect(keys.jwks["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } == [first.keyID, second.keyID])
    }

    @Test func theFileFormReadsTheSameKeys() throws {
        let directory = TestSupport.temporaryDirectory("keys")
        defer { TestSupport.removeTree(directory) }
        try FileSystem.writeAtomically(directory + "/keys.pem", Array((second.pemRepresentation + "\n" + first.pemRepresentation).utf8))
        let configured = try configuration(["AUTH_SIGNING_KEYS_FILE": directory + "/keys.pem"])
        let keys = try #require(configured.signingKeys)
        #expect(keys.keys.map(\.keyID) == [second.keyID, first.keyID])
        #expect(configError(["AUTH_SIGNING_KEYS_FILE": directory + "/absent.pem"])?.hasPrefix("AUTH_SIGNING_KEYS_FILE cannot be read") == true)
    }

    @Test func theOneKeyFormsStillWork() throws {
        #expect(try configuration(["AUTH_SIGNING_KEY": first.pemRepresentation]).signingKeys?.keys.map(\.keyID) == [first.keyID])
        #expect(try configuration([:]).signingKeys == nil, "no key: the local store's dev key")
        #expect(configError(["AUTH_SIGNING_KEY": first.pemRepresentation + second.pemRepresentation])
            == "AUTH_SIGNING_KEY holds 2 keys; several keys go in AUTH_SIGNING_KEYS")
    }

    @Test func twoFormsAtOnceAreRefusedByName() {
        let message = configError(["AUTH_SIGNING_KEY": first.pemRepresentation, "AUTH_SIGNING_KEYS": second.pemRepresentation])
        #expect(message?.hasPrefix("AUTH_SIGNING_KEYS and AUTH_SIGNING_KEY are both set") == true, "\(message ?? "accepted")")
        #expect(message?.contains("PRIVATE") == false)
    }

    @Test(arguments: [
        ("garbage", "AUTH_SIGNING_KEYS has text outside its PEM blocks"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "AUTH_SIGNING_KEYS: key 1 of 1 is neither an RSA nor a P-256 private key"),
        ("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----", "AUTH_SIGNING_KEYS: key 1 of 1 is not an RSA private key"),
        ("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----", "AUTH_SIGNING_KEYS: key 1 of 1 is an EC key but not on P-256"),
        ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
         "AUTH_SIGNING_KEYS: key 1 of 1 is not an unencrypted PEM private key (RSA PRIVATE KEY, EC PRIVATE KEY or PRIVATE KEY)"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n", "AUTH_SIGNING_KEYS: PEM block 1 has no END line"),
        ("   \n", "AUTH_SIGNING_KEYS holds no PEM private key"),
    ])
    func malformedKeysNameTheVariableNeverTheValue(_ value: String, _ expected: String) {
        #expect(configError(["AUTH_SIGNING_KEYS": value]) == expected)
    }

    @Test func aMalformedSecondKeyAndADuplicateAreRefused() {
        let good = first.pemRepresentation
        #expect(configError(["AUTH_SIGNING_KEYS": good + "\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"])
            == "AUTH_SIGNING_KEYS: key 2 of 2 is neither an RSA nor a P-256 private key")
        #expect(configError(["AUTH_SIGNING_KEYS": good + "\n" + second.pemRepresentation + "\n" + good])
            == "AUTH_SIGNING_KEYS: key 3 is the same key as key 1")
        #expect(configError(["AUTH_SIGNING_KEYS": good + "\ntrailing words"]) == "AUTH_SIGNING_KEYS has text outside its PEM blocks")
    }

    // MARK: key types (contract section 13)

    /// A P-256 key in SEC 1's `EC PRIVATE KEY` form (RFC 5915), which swift-crypto does not write.
    static func sec1PEM(_ key: P256.Signing.PrivateKey) -> String {
        let publicPoint = [UInt8](key.publicKey.x963Representation)  // 04 || x || y
        let der: [UInt8] = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + [UInt8](key.rawRepresentation)
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0xA1, 0x44, 0x03, 0x42, 0x00] + publicPoint
        // PEM bodies are wrapped at 64 characters (RFC 7468), which swift-crypto's reader requires.
        var body = Substring(Base64.encoded(der)), lines: [Substring] = []
        while !body.isEmpty { lines.append(body.prefix(64)); body = body.dropFirst(64) }
        return "-----BEGIN EC PRIVATE KEY-----\n" + lines.joined(separator: "\n") + "\n-----END EC PRIVATE KEY-----"
    }

    @Test func pkcs8AndTraditionalFormsOfBothTypesSignTheirAlgorithm() throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let ec = P256.Signing.PrivateKey()
        let forms: [(String, String, JWSAlgorithm)] = [
            ("RSA PKCS#1", rsa.pemRepresentation, .rs256), ("RSA PKCS#8", rsa.pkcs8PEMRepresentation, .rs256),
            ("EC SEC 1", Self.sec1PEM(ec), .es256), ("EC PKCS#8", ec.pemRepresentation, .es256),
        ]
        #expect(configError(["AUTH_SIGNING_KEYS": P384.Signing.PrivateKey().pemRepresentation])
            == "AUTH_SIGNING_KEYS: key 1 of 1 is neither an RSA nor a P-256 private key")
        // A PEM block whose END line names another label is not one (RFC 7468 §2).
        #expect(configError(["AUTH_SIGNING_KEYS": Self.sec1PEM(ec).replacing("-----END EC PRIVATE KEY-----", with: "-----END PRIVATE KEY-----")])
            == "AUTH_SIGNING_KEYS: key 1 of 1 is an EC key but not on P-256")
        #expect(rsa.pemRepresentation.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        #expect(rsa.pkcs8PEMRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(ec.pemRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        for (name, pem, algorithm) in forms {
            let keys = try #require(try configuration(["AUTH_SIGNING_KEYS": pem]).signingKeys, "\(name)")
            #expect(keys.signing.algorithm == algorithm, "\(name)")
            let issuer = AccessTokenIssuer(keys: keys, issuer: "iss", audience: "aud", lifetime: 900)
            let token = try issuer.issue(userID: "u", sessionID: "s", now: 1_000, random: SystemRandomSource())
            let header = try JSONValue.parse(try #require(Base64.urlDecoded(token.split(separator: ".")[0])))
            #expect(header["alg"] == .string(algorithm.rawValue) && header["kid"] == .string(keys.signing.keyID), "\(name)")
            #expect(code(issuer, token) == nil, "\(name)")
            let jwk = keys.jwks["keys"]?.arrayValue?.first
            #expect(jwk?["alg"]?.stringValue == algorithm.rawValue && jwk?["use"]?.stringValue == "sig")
            #expect(jwk?["kid"]?.stringValue == keys.signing.keyID)
        }
        // The two forms of one key are one key.
        let both = forms[0].1 + "\n" + forms[1].1
        #expect(configError(["AUTH_SIGNING_KEYS": both]) == "AUTH_SIGNING_KEYS: key 2 is the same key as key 1")
    }

    @Test func rsaKeysOutside2048To4096BitsAreRefusedByName() throws {
        let short = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        #expect(configError(["AUTH_SIGNING_KEYS": short.pemRepresentation])
            == "AUTH_SIGNING_KEYS: key 1 of 1 is a 1024-bit RSA key; RS256 keys must have 2048 to 4096 bits")
        let long = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: 4096 + 128))
        #expect(configError(["AUTH_SIGNING_KEYS": first.pemRepresentation + "\n" + long.pkcs8PEMRepresentation])
            == "AUTH_SIGNING_KEYS: key 2 of 2 is a 4224-bit RSA key; RS256 keys must have 2048 to 4096 bits")
    }

    @Test func theSigningAlgorithmTheTemplateRequiresIsEnforced() throws {
        let mixed = first.pemRepresentation + "\n" + second.pemRepresentation
        #expect(try configuration(["AUTH_SIGNING_KEYS": mixed, "AUTH_SIGNING_ALGORITHM": "RS256"]).signingKeys?.signing.keyID == first.keyID)
        let esFirst = second.pemRepresentation + "\n" + first.pemRepresentation
        #expect(configError(["AUTH_SIGNING_KEYS": esFirst, "AUTH_SIGNING_ALGORITHM": "RS256"])?
            .hasPrefix("AUTH_SIGNING_KEYS: its first key signs ES256, but AUTH_SIGNING_ALGORITHM is RS256") == true)
        #expect(configError(["AUTH_SIGNING_KEYS": mixed, "AUTH_SIGNING_ALGORITHM": "HS256"]) == "AUTH_SIGNING_ALGORITHM must be RS256 or ES256")
    }

    @Test func theAlgorithmsOfTheSetAreListedOnceEachSigningFirst() {
        #expect(AccessTokenKeySet([first, second]).algorithms == [.rs256, .es256])
        #expect(AccessTokenKeySet([second, first, AccessTokenKey.generate(.es256)]).algorithms == [.es256, .rs256])
        #expect(AccessTokenKeySet([first]).algorithms == [.rs256])
    }

    @Test func theAudienceDefaultsToTheIssuer() throws {
        #expect(try configuration(["AUTH_ISSUER": "https://auth.example.com"]).accessTokenAudience == "https://auth.example.com")
        #expect(try configuration(["AUTH_ISSUER": "https://auth.example.com", "AUTH_ACCESS_TOKEN_AUDIENCE": "my-api"])
            .accessTokenAudience == "my-api")
    }

    // MARK: signing and verifying

    func code(_ issuer: AccessTokenIssuer, _ token: String, now: Int64 = 1_100) -> ErrorCode? {
        do {
            _ = try issuer.verify(token, now: now)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func everyListedKeyVerifiesAndAKeyThatLeftTheListDoesNot() throws {
        let random = SystemRandomSource()
        let before = AccessTokenIssuer(keys: AccessTokenKeySet([first, second]), issuer: "iss", audience: "aud", lifetime: 900)
        let after = AccessTokenIssuer(keys: AccessTokenKeySet([second, first]), issuer: "iss", audience: "aud", lifetime: 900)
        let retired = AccessTokenIssuer(keys: AccessTokenKeySet([second]), issuer: "iss", audience: "aud", lifetime: 900)
        let old = try before.issue(userID: "u", sessionID: "s", now: 1_000, random: random)
        let new = try after.issue(userID: "u", sessionID: "s", now: 1_000, random: random)
        for issuer in [before, after] {
            #expect(code(issuer, old) == nil && code(issuer, new) == nil)
        }
        #expect(code(retired, old) == .accessTokenInvalid)
        #expect(code(retired, new) == nil)
        #expect(try retired.verify(new, now: 1_100).userID == "u")
    }

    @Test func theAudienceIsIssuedAndChecked() throws {
        let random = SystemRandomSource()
        let issuer = AccessTokenIssuer(keys: AccessTokenKeySet([first]), issuer: "iss", audience: "api", lifetime: 900)
        let token = try issuer.issue(userID: "u", sessionID: "s", now: 1_000, random: random)
        let payload = try JSONValue.parse(try #require(Base64.urlDecoded(token.split(separator: ".")[1])))
        #expect(payload["aud"] == "api" && payload["iss"] == "iss")
        let otherAudience = AccessTokenIssuer(keys: AccessTokenKeySet([first]), issuer: "iss", audience: "other-api", lifetime: 900)
        #expect(code(otherAudience, token) == .accessTokenInvalid)

        // An audience array (RFC 7519 §4.1.3) naming ours is accepted; a token without aud is not.
        func signed(_ claims: [String: JSONValue]) throws -> String {
            try JWSSigner.sign(header: ["typ": "JWT"], payload: claims, keyID: first.keyID, key: first.signingKey)
        }
        let base: [String: JSONValue] = ["iss": "iss", "sub": "u", "sid": "s", "iat": 1_000, "exp": 1_900, "jti": "j"]
        var listed = base
        listed["aud"] = ["someone", "api"]
        #expect(code(issuer, try signed(listed)) == nil)
        #expect(code(issuer, try signed(base)) == .accessTokenInvalid)
    }
}
