@testable import LambdaAuth
import Testing

/// RFC 6238's own test vectors (appendix B, SHA-1, the last six of its eight digits), RFC 4648's
/// base32 vectors, the recovery codes' alphabet and the Key Uri Format's escaping.
struct TOTPTests {
    static let rfcSecret = Array("12345678901234567890".utf8)

    @Test(arguments: [(Int64(59), "287082"), (1_111_111_109, "081804"), (1_111_111_111, "050471"), (1_234_567_890, "005924"),
                      (2_000_000_000, "279037"), (20_000_000_000, "353130")])
    func rfc6238Vectors(time: Int64, code: String) {
        #expect(TOTP.code(secret: TOTPTests.rfcSecret, step: TOTP.step(at: time)) == code)
    }

    @Test func oneStepEitherSideIsAcceptedAndTwoAreNot() {
        let now: Int64 = 1_111_111_111
        let step = TOTP.step(at: now)
        for drift in [-1, 0, 1] as [Int64] {
            let code = TOTP.code(secret: TOTPTests.rfcSecret, step: step + drift)
            #expect(TOTP.matchingStep(code, secret: TOTPTests.rfcSecret, now: now) == step + drift)
        }
        for drift in [-2, 2] as [Int64] {
            #expect(TOTP.matchingStep(TOTP.code(secret: TOTPTests.rfcSecret, step: step + drift), secret: TOTPTests.rfcSecret, now: now) == nil)
        }
        #expect(TOTP.matchingStep("12345", secret: TOTPTests.rfcSecret, now: now) == nil)
    }

    @Test func malformedCodesAreInvalidRequestsNotAttempts() {
        for bad in ["", "12345", "1234567", "12345a", "١٢٣٤٥٦"] {
            #expect(throws: AuthError.self) { try TOTP.validate(bad) }
        }
    }

    @Test(arguments: [("", ""), ("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"),
                      ("foobar", "MZXW6YTBOI")])
    func base32Vectors(plain: String, encoded: String) {
        #expect(Base32.encode(Array(plain.utf8)) == encoded)
        #expect(Base32.decoded(encoded) == Array(plain.utf8))
        #expect(Base32.decoded(encoded.lowercased() + "====") == Array(plain.utf8))
    }

    @Test func base32RefusesWhatIsNotBase32() {
        #expect(Base32.decoded("MZXW1") == nil)  // 1 is not in the alphabet
        #expect(Base32.decoded("MZ!") == nil)
        #expect(Base32.decoded("MY") == Array("f".utf8) && Base32.decoded("MZ") == nil)  // Z leaves a non-zero trailing bit after "f"
    }

    @Test func recoveryCodesAreTenOfTenCharactersOfTheAlphabet() {
        let codes = RecoveryCodes.generate(SystemRandomSource())
        #expect(codes.count == 10 && Set(codes).count == 10)
        for code in codes {
            #expect(code.utf8.count == 10 && code.utf8.allSatisfy(RecoveryCodes.alphabet.contains))
        }
        #expect(RecoveryCodes.normalized("ABCDE-FGH23") == "abcdefgh23")
        #expect(RecoveryCodes.normalized("abcde fgh23") == "abcdefgh23")
        #expect(RecoveryCodes.normalized("abcdefgh1") == nil && RecoveryCodes.normalized("abcdefgh01") == nil)
        let secret = Array(repeating: UInt8(7), count: 20)
        #expect(RecoveryCodes.hash("abcdefgh23", secret: secret) == RecoveryCodes.hash("abcdefgh23", secret: secret))
        #expect(RecoveryCodes.hash("abcdefgh23", secret: secret) != RecoveryCodes.hash("abcdefgh23", secret: Array(repeating: 8, count: 20)))
    }

    @Test func theKeyURIEscapesItsLabel() {
        let uri = KeyURI.totp(issuer: "Acme Corp", account: "ada+x@example.com", secret: "ABC")
        #expect(uri == "otpauth://totp/Acme%20Corp:ada%2Bx%40example.com?secret=ABC&issuer=Acme%20Corp&algorithm=SHA1&digits=6&period=30")
        #expect(MFASettings.defaultIssuer("https://auth.example.com/v1") == "auth.example.com")
        #expect(MFASettings.defaultIssuer("https://auth.example.com:8443") == "auth.example.com")
        #expect(MFASettings.defaultIssuer("lambda-auth") == "lambda-auth")
    }

    @Test func mfaTokensParseOnlyTheirOwnForm() {
        let secret = Array(repeating: UInt8(1), count: 32)
        let token = MFAToken.spell(userID: "abc234", secret: secret)
        #expect(MFAToken.parse(token)?.userID == "abc234")
        for bad in ["", ".", "abc234.", "abc234.AAAA", "a#b." + Base64.urlEncoded(secret), String(repeating: "a", count: 200) + "." + Base64.urlEncoded(secret)] {
            #expect(MFAToken.parse(bad) == nil, "\(bad)")
        }
    }
}
