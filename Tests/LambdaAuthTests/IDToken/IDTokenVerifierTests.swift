import Crypto
import CryptoExtras
import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Every check of the verifier, with tokens minted here, against a file:// JWKS.
final class IDTokenVerifierTests {
    let issuer = TestIssuer()
    let directory = TestSupport.temporaryDirectory()
    let log = CapturedLog()

    deinit { TestSupport.removeTree(directory) }

    func verifier(_ extra: [String: String] = [:], jwks: JSONValue? = nil, now: Double? = nil) throws -> IDTokenVerifier {
        let url = TestJWKS.file(jwks ?? issuer.jwks, in: directory)
        let configuration = try AuthConfiguration.fromEnvironment(
            VerifierEnvironment.make(googleJWKS: url, cacheDirectory: directory, extra: extra))
        return IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                               httpClient: CurlHTTPClient(),
                               clock: FixedClock(now ?? Double(issuer.now)), logger: log.logger)
    }

    /// The error a verification ends with, or nil when it succeeds.
    func failure(_ token: String, _ provider: ProviderName = .google, nonce: String? = nil,
                 verifier: IDTokenVerifier? = nil) throws -> AuthError? {
        do {
            _ = try (verifier ?? self.verifier()).verify(token, provider: provider, nonce: nonce)
            return nil
        } catch let error as AuthError {
            return error
        }
    }

    func code(_ token: String, _ provider: ProviderName = .google, nonce: String? = nil,
              verifier: IDTokenVerifier? = nil) throws -> ErrorCode? {
        try failure(token, provider, nonce: nonce, verifier: verifier)?.code
    }

    // MARK: accepted tokens

    @Test func aGoogleTokenYieldsItsIdentity() throws {
        let identity = try verifier().verify(issuer.token(.google), provider: .google, nonce: nil)
        #expect(identity.provider == .google)
        #expect(identity.subject == "1234567890")
        #expect(identity.email == "user@example.com")
        #expect(identity.emailVerified)
        #expect(!identity.isPrivateEmail)
        #expect(identity.name == "Test User")
        #expect(identity.claims["azp"] == .string(TestIssuer.googleAudience))
    }

    @Test func anAppleTokenWithStringBooleansYieldsItsIdentity() throws {
        let token = issuer.token(.apple, changes: ["email": "abc@privaterelay.appleid.com", "is_private_email": "true",
                                                   "email_verified": "true"])
        let identity = try verifier().verify(token, provider: .apple, nonce: nil)
        #expect(identity.provider == .apple)
        #expect(identity.emailVerified && identity.isPrivateEmail)
        #expect(identity.name == nil)
        let unverified = issuer.token(.apple, changes: ["email_verified": "false", "is_private_email": false])
        let second = try verifier().verify(unverified, provider: .apple, nonce: nil)
        #expect(!second.emailVerified && !second.isPrivateEmail)
    }

    @Test(arguments: [JSONValue.string("yes"), 1, .null, .array([true])])
    func emailVerifiedOtherThanBooleansOrTheirStringsIsFalse(_ value: JSONValue) throws {
        let identity = try verifier().verify(issuer.token(.google, changes: ["email_verified": value]),
                                             provider: .google, nonce: nil)
        #expect(!identity.emailVerified)
    }

    @Test func theIssuerMayOmitTheScheme() throws {
        #expect(try code(issuer.token(.google, changes: ["iss": "accounts.google.com"])) == nil)
    }

    @Test func anyAudienceOfTheArrayMayBeTheAcceptedOne() throws {
        #expect(try code(issuer.token(.google, changes: ["aud": ["someone-else", .string(TestIssuer.googleAudience)]])) == nil)
        #expect(try code(issuer.token(.google, changes: ["aud": "other-client"])) == nil)
    }

    // MARK: request-level refusals

    @Test func aProviderWithoutAudiencesIsNotConfigured() throws {
        let verifier = try verifier(["AUTH_APPLE_AUDIENCES": ""])
        #expect(try code(issuer.token(.apple), .apple, verifier: verifier) == .providerNotConfigured)
        #expect(try failure(issuer.token(.apple), .apple, verifier: verifier)?.status == 400)
    }

    @Test func aTokenOver16KiBIsAnInvalidRequest() throws {
        let padding = String(repeating: "x", count: 16 << 10)
        let token = issuer.token(.google, changes: ["padding": .string(padding)])
        #expect(try failure(token)?.code == .invalidRequest)
        #expect(try failure(token)?.status == 400)
    }

    // MARK: header refusals

    @Test(arguments: ["none", "HS256", "HS384", "HS512", "RS384", "PS256", "ES256", "rs256", ""])
    func algorithmsOtherThanRS256AreUnsupported(_ algorithm: String) throws {
        let claims = JSONValue.object(issuer.claims())
        let forged = TokenForge.token(header: ["alg": .string(algorithm), "kid": .string(issuer.keyID)], payload: claims,
                                      signature: algorithm == "none" ? [] : Array(repeating: 7, count: 32))
        #expect(try code(forged) == .unsupportedAlgorithm)
    }

    @Test func anHS256TokenKeyedWithThePublicKeyIsUnsupported() throws {
        // The classic confusion attack: HMAC keyed with the bytes of the published RSA key.
        let claims = JSONValue.object(issuer.claims())
        let header: JSONValue = ["alg": "HS256", "kid": .string(issuer.keyID)]
        let input = TokenForge.signingInput(header: header, payload: claims)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8),
                                                  using: SymmetricKey(data: issuer.jwks.serializedBytes()))
        #expect(try code(input + "." + Base64.urlEncoded(mac)) == .unsupportedAlgorithm)
    }

    @Test func aMissingOrNonStringAlgIsUnsupported() throws {
        let claims = JSONValue.object(issuer.claims())
        for header: JSONValue in [["kid": .string(issuer.keyID)], ["alg": 1, "kid": .string(issuer.keyID)]] {
            #expect(try code(TokenForge.token(header: header, payload: claims, signature: [1])) == .unsupportedAlgorithm)
        }
    }

    @Test(arguments: [JSONValue.array(["exp"]), .array([]), "b64"])
    func anyCritHeaderIsUnsupported(_ crit: JSONValue) throws {
        // Correctly signed: crit alone is the reason.
        #expect(try code(issuer.token(issuer.claims(), header: ["crit": crit])) == .unsupportedAlgorithm)
    }

    @Test func aTokenWithoutKidIsAnUnknownKeyID() throws {
        let token = TokenForge.replacing(part: 0, of: issuer.token(.google), with: TokenForge.part(#"{"alg":"RS256"}"#))
        #expect(try code(token) == .unknownKeyID)
        for kid: JSONValue in ["", 5, .null] {
            #expect(try code(issuer.token(.google).replacingKid(kid)) == .unknownKeyID)
        }
    }

    @Test func aKidAbsentFromTheJWKSIsAnUnknownKeyID() throws {
        #expect(try code(issuer.token(issuer.claims(), keyID: "not-published")) == .unknownKeyID)
    }

    @Test(arguments: ["jwk", "jku", "x5u", "x5c"])
    func keyHintsInTheHeaderNeverChooseTheKey(_ hint: String) throws {
        // A forger signs with their own key and points at it every way JOSE allows.
        let forger = TestIssuer(keyIndex: 1, keyID: "test-key-0")
        let server = "https://attacker.example/jwks.json"
        let value: JSONValue
        switch hint {
        case "jwk": value = forger.jwk
        case "x5c": value = [.string(Base64.encoded(Array(forger.key.publicKey.derRepresentation)))]
        default: value = .string(server)
        }
        // Under the legitimate kid, the forged signature is simply wrong...
        #expect(try code(forger.token(forger.claims(), header: [hint: value])) == .invalidSignature)
        // ...and under a kid of their own, there is no such key.
        #expect(try code(forger.token(forger.claims(), header: [hint: value], keyID: "forger")) == .unknownKeyID)
    }

    // MARK: signature

    @Test func aTamperedPayloadFailsTheSignature() throws {
        let token = issuer.token(.google)
        let tampered = TokenForge.replacing(part: 1, of: token,
                                            with: Base64.urlEncoded(JSONValue.object(issuer.claims(subject: "someone-else")).serializedBytes()))
        #expect(try code(tampered) == .invalidSignature)
        #expect(try code(TokenForge.replacing(part: 2, of: token, with: "")) == .invalidSignature)
        #expect(try code(TokenForge.replacing(part: 2, of: token, with: "AAAA")) == .invalidSignature)
    }

    @Test func aTokenSignedByAnotherKeyUnderAPublishedKidFails() throws {
        let other = TestIssuer(keyIndex: 2, keyID: "test-key-0")
        #expect(try code(other.token(.google)) == .invalidSignature)
    }

    // MARK: claims

    @Test func theIssuerMustBeTheProvidersOwn() throws {
        #expect(try code(issuer.token(.google, changes: ["iss": "https://appleid.apple.com"])) == .invalidIssuer)
        #expect(try code(issuer.token(.apple), .google) == .invalidIssuer)
        #expect(try code(issuer.token(.google, changes: ["iss": nil])) == .invalidIssuer)
        #expect(try code(issuer.token(.google, changes: ["iss": ["https://accounts.google.com"]])) == .invalidIssuer)
        #expect(try code(issuer.token(.google, changes: ["iss": "https://accounts.google.com/"])) == .invalidIssuer)
    }

    @Test func theAudienceMustBeAnAcceptedOne() throws {
        #expect(try code(issuer.token(.google, changes: ["aud": "someone-else"])) == .invalidAudience)
        #expect(try code(issuer.token(.google, changes: ["aud": nil])) == .invalidAudience)
        #expect(try code(issuer.token(.google, changes: ["aud": []])) == .invalidAudience)
        #expect(try code(issuer.token(.google, changes: ["aud": 5])) == .invalidAudience)
        // Apple's audiences are not Google's.
        #expect(try code(issuer.token(.apple, changes: ["aud": .string(TestIssuer.googleAudience)]), .apple) == .invalidAudience)
    }

    /// OpenID Connect Core 3.1.3.7 items 4 and 5: a token of several audiences was asked for by
    /// its `azp`, which must be one of ours; without the check, another client's token that
    /// merely lists us signs in. A single audience is judged by `aud` alone (Google's token for
    /// an Android app: the server's client id in `aud`, the Android client's in `azp`).
    @Test(arguments: [ProviderName.google, .apple])
    func severalAudiencesNeedAnAuthorizedPartyOfOurs(_ provider: ProviderName) throws {
        let ours = JSONValue.string(provider == .google ? TestIssuer.googleAudience : TestIssuer.appleAudience)
        let verifier = try verifier()
        func code(_ changes: [String: JSONValue?]) throws -> ErrorCode? {
            try self.code(issuer.token(provider, changes: changes), provider, verifier: verifier)
        }
        #expect(try code(["aud": ["someone-else", ours], "azp": "someone-else"]) == .invalidAudience)
        #expect(try code(["aud": [ours, "someone-else"], "azp": nil]) == .invalidAudience)
        #expect(try code(["aud": [ours, "someone-else"], "azp": ["someone-else", ours]]) == .invalidAudience)
        #expect(try code(["aud": ["someone-else", ours], "azp": ours]) == nil)
        #expect(try code(["aud": ours, "azp": "android-client.apps.example.com"]) == nil)
        #expect(try code(["aud": [ours], "azp": "android-client.apps.example.com"]) == nil)
        #expect(try code(["aud": ours, "azp": nil]) == nil)
        if provider == .google {
            // Any configured audience may be the authorized party (AUTH_GOOGLE_AUDIENCES has two).
            #expect(try code(["aud": ["other-client", ours], "azp": "other-client"]) == nil)
        }
    }

    @Test func expiryHonoursTheSkewAndNamesTheTime() throws {
        let now = issuer.now
        #expect(try code(issuer.token(.google, changes: ["exp": .number(now - 59)])) == nil)
        let expired = try failure(issuer.token(.google, changes: ["exp": .number(now - 60)]))
        #expect(expired?.code == .tokenExpired)
        #expect(expired?.message == "the ID token expired at \(ISO8601.format(epochSeconds: now - 60))")
        #expect(try code(issuer.token(.google, changes: ["exp": nil])) == .tokenExpired)
        #expect(try code(issuer.token(.google, changes: ["exp": "1999999999"])) == .tokenExpired)
        #expect(try code(issuer.token(.google, changes: ["exp": .number("-1e300")])) == .tokenExpired)
        // A wider skew accepts what the default refused.
        #expect(try code(issuer.token(.google, changes: ["exp": .number(now - 60)]),
                         verifier: verifier(["AUTH_CLOCK_SKEW": "120"])) == nil)
    }

    @Test func issuedAtOrNotBeforeInTheFutureIsNotYetValid() throws {
        let now = issuer.now
        #expect(try code(issuer.token(.google, changes: ["iat": .number(now + 60)])) == nil)
        #expect(try code(issuer.token(.google, changes: ["iat": .number(now + 61)])) == .tokenNotYetValid)
        #expect(try code(issuer.token(.google, changes: ["nbf": .number(now + 61)])) == .tokenNotYetValid)
        #expect(try code(issuer.token(.google, changes: ["iat": .number("1e300"), "exp": .number("1e301")])) == .tokenNotYetValid)
        #expect(try code(issuer.token(.google, changes: ["iat": "soon"])) == .malformedToken)
    }

    @Test func theNonceIsTheRawOneOrItsSHA256() throws {
        let raw = "n-0S6_WzA2Mj"
        let hashed = Array(SHA256.hash(data: Array(raw.utf8))).hexString
        #expect(try code(issuer.token(.google, changes: ["nonce": .string(raw)]), nonce: raw) == nil)
        #expect(try code(issuer.token(.apple, changes: ["nonce": .string(hashed)]), .apple, nonce: raw) == nil)
        #expect(try code(issuer.token(.google, changes: ["nonce": .string(hashed.uppercased())]), nonce: raw) == .nonceMismatch)
        #expect(try code(issuer.token(.google, changes: ["nonce": "other"]), nonce: raw) == .nonceMismatch)
        #expect(try code(issuer.token(.google), nonce: raw) == .nonceMismatch)
        #expect(try code(issuer.token(.google, changes: ["nonce": 5]), nonce: "5") == .nonceMismatch)
    }

    @Test func aNonceIsRequiredWhenTheTokenHasOneOrTheConfigurationSaysSo() throws {
        #expect(try code(issuer.token(.google, changes: ["nonce": "abc"])) == .nonceRequired)
        let strict = try verifier(["AUTH_REQUIRE_NONCE": "true"])
        #expect(try code(issuer.token(.google), verifier: strict) == .nonceRequired)
        #expect(try code(issuer.token(.google, changes: ["nonce": "abc"]), nonce: "abc", verifier: strict) == nil)
    }

    @Test func aTokenWithoutSubjectIsMalformed() throws {
        #expect(try code(issuer.token(.google, changes: ["sub": nil])) == .malformedToken)
        #expect(try code(issuer.token(.google, changes: ["sub": 42])) == .malformedToken)
    }

    @Test func signatureIsCheckedBeforeAnyClaim() throws {
        // Expired, wrong issuer and audience, but forged: the caller learns only that the signature is bad.
        let forger = TestIssuer(keyIndex: 1)
        let token = forger.token(forger.claims(changes: ["exp": 1, "iss": "x", "aud": "y"]))
        #expect(try code(token) == .invalidSignature)
    }

    // MARK: keys unavailable, logs

    @Test func aMissingJWKSFileIsJWKSUnavailable() throws {
        let configuration = try AuthConfiguration.fromEnvironment(
            VerifierEnvironment.make(googleJWKS: "file://\(directory)/absent.json", cacheDirectory: directory))
        let verifier = IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                                       httpClient: CurlHTTPClient(),
                                       clock: FixedClock(Double(issuer.now)), logger: log.logger)
        let error = try failure(issuer.token(.google), verifier: verifier)
        #expect(error?.code == .jwksUnavailable)
        #expect(error?.status == 503 && error?.retryable == true)
    }

    @Test func noTokenReachesTheLogOrAnErrorMessage() throws {
        let token = issuer.token(.google)
        let parts = token.split(separator: ".").map(String.init)
        let verifier = try verifier()
        _ = try verifier.verify(token, provider: .google, nonce: nil)
        let messages = try [issuer.token(.google, changes: ["exp": 1]), TokenForge.replacing(part: 2, of: token, with: "AAAA"),
                            parts[0] + "." + parts[1], token + "x"].compactMap { try failure($0, verifier: verifier)?.message }
        #expect(messages.count == 4)
        for text in log.lines + messages {
            #expect(!text.contains(parts[1]) && !text.contains(parts[2]))
        }
    }
}

extension String {
    /// Rewrites the header's kid of a token (test-only; the signature no longer matters here).
    func replacingKid(_ kid: JSONValue) -> String {
        var header = (try? JSONValue.parse(Base64.urlDecoded(split(separator: ".")[0]) ?? []))?.objectValue ?? [:]
        header["kid"] = kid
        return TokenForge.replacing(part: 0, of: self, with: Base64.urlEncoded(JSONValue.object(header).serializedBytes()))
    }
}
