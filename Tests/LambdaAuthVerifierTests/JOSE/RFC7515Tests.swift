import Crypto
import LambdaAuth
import LambdaAuthTestSupport
import Testing

@Suite struct RFC7515Tests {
    static func key(_ json: String, _ algorithm: JWSAlgorithm) throws -> JSONWebKey {
        try JSONWebKey(try JSONValue.parse(json), for: algorithm)
    }

    @Test func appendixA2VerifiesWithRS256() throws {
        let jwt = try JSONWebToken(parsing: RFC7515Vectors.rs256Token)
        let key = try Self.key(RFC7515Vectors.rs256JWK, .rs256)
        try jwt.jws.verifySignature(with: key)
        #expect(jwt.claims["iss"] == "joe")
        #expect(jwt.claims["http://example.com/is_root"] == true)
        // The claims' times are checked against a clock pinned before the 2011 expiry...
        try IDTokenClaims.checkTimes(jwt.claims, now: RFC7515Vectors.expiry - 3600, skew: 60)
        // ...and the same token is expired once that clock passes exp + skew.
        #expect(throws: AuthError.self) {
            try IDTokenClaims.checkTimes(jwt.claims, now: RFC7515Vectors.expiry + 60, skew: 60)
        }
    }

    @Test func appendixA2WithAnyByteChangedFailsItsSignature() throws {
        let key = try Self.key(RFC7515Vectors.rs256JWK, .rs256)
        let parts = RFC7515Vectors.rs256Token.split(separator: ".").map(String.init)
        let tamperedPayload = TokenForge.part(#"{"iss":"joe","exp":1300819380,"http://example.com/is_root":false}"#)
        let jws = try CompactJWS(parsing: parts[0] + "." + tamperedPayload + "." + parts[2])
        #expect(throws: AuthError.self) { try jws.verifySignature(with: key) }
    }

    @Test func appendixA3VerifiesWithTheGenericES256Check() throws {
        let jws = try CompactJWS(parsing: RFC7515Vectors.es256Token)
        let key = try Self.key(RFC7515Vectors.es256JWK, .es256)
        try jws.verifySignature(with: key)
        // The RS256 key cannot check it: the header's alg must be the key's.
        let rsa = try Self.key(RFC7515Vectors.rs256JWK, .rs256)
        do {
            try jws.verifySignature(with: rsa)
            Issue.record("ES256 token accepted by an RS256 key")
        } catch {
            #expect(error.code == .unsupportedAlgorithm)
        }
    }

    @Test func ourOwnES256TokensPassTheSameGenericCheck() throws {
        let signingKey = P256.Signing.PrivateKey()
        let token = try JWSSigner.signES256(payload: ["sub": "user-1"], keyID: "access-1", key: signingKey)
        let jws = try CompactJWS(parsing: token)
        #expect(jws.signature.count == 64 && jws.keyID == "access-1")
        try jws.verifySignature(with: JSONWebKey(keyID: "access-1", material: .p256(signingKey.publicKey)))
        let other = JSONWebKey(keyID: "access-1", material: .p256(P256.Signing.PrivateKey().publicKey))
        #expect(throws: AuthError.self) { try jws.verifySignature(with: other) }
    }

    @Test(arguments: ProviderName.idTokenProviders)
    func appendixA3IsAnUnsupportedAlgorithmForGoogleAndApple(_ provider: ProviderName) throws {
        let directory = TestSupport.temporaryDirectory()
        defer { TestSupport.removeTree(directory) }
        // Even with the vector's own key published (under the kid a forger would pick).
        var es256 = try JSONValue.parse(RFC7515Vectors.es256JWK).objectValue!
        es256["kid"] = "a3"
        let url = TestJWKS.file(TestJWKS.document([.object(es256), TestIssuer().jwk]), in: directory)
        let configuration = try AuthConfiguration.fromEnvironment(VerifierEnvironment.make(googleJWKS: url, cacheDirectory: directory))
        let verifier = IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                                       httpClient: CurlHTTPClient(),
                                       clock: FixedClock(RFC7515Vectors.expiry - 10), logger: CapturedLog().logger)
        for token in [RFC7515Vectors.es256Token,
                      TokenForge.replacing(part: 0, of: RFC7515Vectors.es256Token, with: TokenForge.part(#"{"alg":"ES256","kid":"a3"}"#))] {
            do {
                _ = try verifier.verify(token, provider: provider, nonce: nil)
                Issue.record("ES256 accepted for \(provider)")
            } catch {
                #expect(error.code == .unsupportedAlgorithm)
            }
        }
    }
}
