import Crypto
import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// `AUTH_SIGNING_KEYS` and its three other forms, and what a key set signs and accepts: the
/// configuration side of rotation. The processes' side is AccessTokenPeerTests.
@Suite struct AccessTokenKeySetTests {
    let first = AccessTokenKey.generate()
    let second = AccessTokenKey.generate()

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
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "AUTH_SIGNING_KEYS: key 1 of 1 is not a PEM EC P-256 private key"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n", "AUTH_SIGNING_KEYS: PEM block 1 has no END line"),
        ("   \n", "AUTH_SIGNING_KEYS holds no PEM private key"),
    ])
    func malformedKeysNameTheVariableNeverTheValue(_ value: String, _ expected: String) {
        #expect(configError(["AUTH_SIGNING_KEYS": value]) == expected)
    }

    @Test func aMalformedSecondKeyAndADuplicateAreRefused() {
        let good = first.pemRepresentation
        #expect(configError(["AUTH_SIGNING_KEYS": good + "\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"])
            == "AUTH_SIGNING_KEYS: key 2 of 2 is not a PEM EC P-256 private key")
        #expect(configError(["AUTH_SIGNING_KEYS": good + "\n" + second.pemRepresentation + "\n" + good])
            == "AUTH_SIGNING_KEYS: key 3 is the same key as key 1")
        #expect(configError(["AUTH_SIGNING_KEYS": good + "\ntrailing words"]) == "AUTH_SIGNING_KEYS has text outside its PEM blocks")
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
            try JWSSigner.signES256(header: ["typ": "JWT"], payload: claims, keyID: first.keyID, key: first.privateKey)
        }
        let base: [String: JSONValue] = ["iss": "iss", "sub": "u", "sid": "s", "iat": 1_000, "exp": 1_900, "jti": "j"]
        var listed = base
        listed["aud"] = ["someone", "api"]
        #expect(code(issuer, try signed(listed)) == nil)
        #expect(code(issuer, try signed(base)) == .accessTokenInvalid)
    }
}
