import Crypto
import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Each check of W3C WebAuthn Level 3 §7.1 and §7.2 made to fail alone with a software
/// authenticator, and every algorithm and attestation form accepted.
@Suite struct WebAuthnVerifierTests {
    static let settings = PasskeySettings(relyingPartyID: "example.com", relyingPartyName: "Example", origins: ["https://example.com"],
                                          userVerificationRequired: true)
    static let verifier = WebAuthnVerifier(settings: settings)
    static let challenge: [UInt8] = Array(repeating: 7, count: 32)

    static func register(_ json: JSONValue, challenge: [UInt8] = challenge, verifier: WebAuthnVerifier = verifier) throws(AuthError) -> VerifiedRegistration {
        try verifier.verifyRegistration(try RegistrationResponse(RequestBody(json.objectValue!)), challenge: challenge)
    }

    static func refusal(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch {
            let error = AuthError.from(error)
            return "\(error.code.rawValue): \(error.message)"
        }
    }

    static func stored(_ authenticator: SoftPasskeyAuthenticator, registration: VerifiedRegistration, signCount: UInt32? = nil) -> StoredCredential {
        StoredCredential(publicKeyBytes: registration.publicKeyBytes, signCount: signCount ?? registration.signCount,
                         userHandle: authenticator.userHandle, backupEligible: registration.backupEligible)
    }

    static func assert(_ json: JSONValue, credential: StoredCredential, challenge: [UInt8] = challenge,
                       verifier: WebAuthnVerifier = verifier) throws(AuthError) -> VerifiedAssertion {
        try verifier.verifyAssertion(try AuthenticationResponse(RequestBody(json.objectValue!)), challenge: challenge, credential: credential)
    }

    @Test(arguments: [COSEAlgorithm.es256, .edDSA, .rs256], [SoftPasskeyAuthenticator.Attestation.none, .packedSelf])
    func everyAlgorithmRegistersAndSignsIn(algorithm: COSEAlgorithm, attestation: SoftPasskeyAuthenticator.Attestation) throws {
        var authenticator = SoftPasskeyAuthenticator(algorithm: algorithm, userHandle: [1, 2, 3])
        let registration = try Self.register(authenticator.registration(challenge: Self.challenge, attestation: attestation))
        #expect(registration.algorithm == algorithm)
        #expect(registration.credentialID == authenticator.credentialID)
        #expect(registration.backupEligible && registration.backedUp)
        #expect(registration.transports == ["internal"])
        let assertion = try Self.assert(authenticator.assertion(challenge: Self.challenge), credential: Self.stored(authenticator, registration: registration))
        #expect(assertion.signCount == 1)
    }

    @Test func registrationRefusalsNameTheirCheck() throws {
        let authenticator = SoftPasskeyAuthenticator(userHandle: [9])
        let wrongType = authenticator.clientDataJSON(type: "webauthn.get", challenge: Self.challenge)
        let wrongOrigin = authenticator.clientDataJSON(type: "webauthn.create", challenge: Self.challenge, origin: "https://evil.example")
        let cases: [(JSONValue, String)] = [
            (authenticator.registration(challenge: Self.challenge, clientDataJSON: wrongType), "clientDataJSON.type is not webauthn.create"),
            (authenticator.registration(challenge: [1, 2, 3]), "clientDataJSON.challenge is not this ceremony's"),
            (authenticator.registration(challenge: Self.challenge, clientDataJSON: wrongOrigin), "clientDataJSON.origin is not among AUTH_PASSKEY_ORIGINS"),
            (authenticator.registration(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: true, rpID: "evil.example")),
             "authenticatorData.rpIdHash is not SHA-256 of AUTH_PASSKEY_RP_ID"),
            (authenticator.registration(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: true, flags: 0b0000_0100)),
             "user presence (UP) is not set"),
            (authenticator.registration(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: true, flags: 0b0000_0001)),
             "user verification (UV) is not set and AUTH_PASSKEY_USER_VERIFICATION is required"),
            (authenticator.registration(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: true, flags: 0b0001_0101)),
             "backup state (BS) is set without backup eligibility (BE)"),
            (authenticator.registration(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: false)),
             "authenticatorData has no attested credential data (AT)"),
            (authenticator.registration(challenge: Self.challenge, attestationObject: [0xA1, 0x01]), "attestationObject is not CBOR (count 1 runs past the end of input at byte 0)"),
            (authenticator.registration(challenge: Self.challenge, attestationObject: TestCBOR.map([(.text("fmt"), .text("none")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(authenticator.authenticatorData(attested: true)))]).encoded + [0]),
             "attestationObject is not CBOR (trailing bytes after the item at byte \(TestCBOR.map([(.text("fmt"), .text("none")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(authenticator.authenticatorData(attested: true)))]).encoded.count))"),
            (authenticator.registration(challenge: Self.challenge, attestationObject: TestCBOR.map([(.text("fmt"), .text("none")), (.text("fmt"), .text("none")), (.text("authData"), .bytes([]))]).encoded),
             "attestationObject is not CBOR (duplicate map key at byte 10)"),
            (authenticator.registration(challenge: Self.challenge, attestationObject: TestCBOR.map([(.text("fmt"), .text("tpm")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(authenticator.authenticatorData(attested: true)))]).encoded),
             "attestation format tpm is not none or packed"),
            (authenticator.registration(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: true) + [0]),
             "authenticatorData: 1 bytes after the last field"),
        ]
        for (json, message) in cases {
            #expect(Self.refusal { _ = try Self.register(json) } == "PASSKEY_INVALID: \(message)")
        }
    }

    @Test func packedSelfAttestationMustBeSignedByTheCredentialKey() throws {
        let authenticator = SoftPasskeyAuthenticator()
        let other = SoftPasskeyAuthenticator()
        let authData = authenticator.authenticatorData(attested: true)
        let clientData = authenticator.clientDataJSON(type: "webauthn.create", challenge: Self.challenge)
        let forged = TestCBOR.map([(.text("fmt"), .text("packed")),
                                   (.text("attStmt"), .map([(.text("alg"), .int(-7)), (.text("sig"), .bytes(other.sign(authData + Array(SHA256.hash(data: clientData)))))])),
                                   (.text("authData"), .bytes(authData))]).encoded
        #expect(Self.refusal { _ = try Self.register(authenticator.registration(challenge: Self.challenge, attestationObject: forged)) }
                == "PASSKEY_INVALID: packed self attestation signature does not verify under the credential key")
    }

    @Test func unsupportedKeysAreRefused() throws {
        let authenticator = SoftPasskeyAuthenticator()
        var authData = authenticator.authenticatorData(attested: false)
        authData[32] |= 0x40
        authData += [UInt8](repeating: 0, count: 16) + [0, UInt8(authenticator.credentialID.count)] + authenticator.credentialID
        // ES384 (-35), which the options never offer.
        let es384 = authData + TestCBOR.map([(.int(1), .int(2)), (.int(3), .int(-35)), (.int(-1), .int(2)), (.int(-2), .bytes(Array(repeating: 1, count: 48))), (.int(-3), .bytes(Array(repeating: 1, count: 48)))]).encoded
        #expect(Self.refusal { _ = try Self.register(authenticator.registration(challenge: Self.challenge, authenticatorData: es384)) }
                == "PASSKEY_INVALID: credential public key: alg -35 is not ES256 (-7), EdDSA (-8) or RS256 (-257)")
        // A point that is not on the curve.
        let offCurve = authData + TestCBOR.map([(.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)), (.int(-2), .bytes(Array(repeating: 1, count: 32))), (.int(-3), .bytes(Array(repeating: 1, count: 32)))]).encoded
        #expect(Self.refusal { _ = try Self.register(authenticator.registration(challenge: Self.challenge, authenticatorData: offCurve)) }
                == "PASSKEY_INVALID: credential public key: x, y is not a P-256 point")
        // A credential id of 1,100 bytes, in the JSON form.
        let long = SoftPasskeyAuthenticator(credentialID: Array(repeating: 5, count: 1100))
        #expect(Self.refusal { _ = try Self.register(long.registration(challenge: Self.challenge)) }
                == "PASSKEY_INVALID: credential id is longer than 1023 bytes")
    }

    @Test func assertionRefusalsNameTheirCheck() throws {
        var authenticator = SoftPasskeyAuthenticator(userHandle: [4, 4])
        let registration = try Self.register(authenticator.registration(challenge: Self.challenge))
        authenticator.signCount = 5
        let credential = Self.stored(authenticator, registration: registration, signCount: 5)
        var copy = authenticator
        let cases: [(JSONValue, String)] = [
            (copy.assertion(challenge: Self.challenge, clientDataJSON: authenticator.clientDataJSON(type: "webauthn.create", challenge: Self.challenge)), "clientDataJSON.type is not webauthn.get"),
            (copy.assertion(challenge: Self.challenge, clientDataJSON: authenticator.clientDataJSON(type: "webauthn.get", challenge: [0])), "clientDataJSON.challenge is not this ceremony's"),
            (copy.assertion(challenge: Self.challenge, clientDataJSON: authenticator.clientDataJSON(type: "webauthn.get", challenge: Self.challenge, origin: "https://example.com.evil")),
             "clientDataJSON.origin is not among AUTH_PASSKEY_ORIGINS"),
            (copy.assertion(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: false, rpID: "other.com")), "authenticatorData.rpIdHash is not SHA-256 of AUTH_PASSKEY_RP_ID"),
            (copy.assertion(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: false, flags: 0b0001_1100)), "user presence (UP) is not set"),
            (copy.assertion(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: false, flags: 0b0001_1001)), "user verification (UV) is not set and AUTH_PASSKEY_USER_VERIFICATION is required"),
            (copy.assertion(challenge: Self.challenge, authenticatorData: authenticator.authenticatorData(attested: false, flags: 0b0000_0101)), "backup eligibility (BE) differs from the registered passkey's"),
            (copy.assertion(challenge: Self.challenge, corruptSignature: true), "the credential is unknown or its signature does not verify"),
        ]
        for (json, message) in cases {
            #expect(Self.refusal { _ = try Self.assert(json, credential: credential) } == "PASSKEY_INVALID: \(message)")
        }
        // A count that went back, and one that stayed.
        var rolledBack = authenticator
        rolledBack.signCount = 2
        #expect(Self.refusal { _ = try Self.assert(rolledBack.assertion(challenge: Self.challenge), credential: credential) }
                == "PASSKEY_INVALID: signCount 3 is not above the stored 5")
        var same = authenticator
        same.signCount = 4
        #expect(Self.refusal { _ = try Self.assert(same.assertion(challenge: Self.challenge), credential: credential) }
                == "PASSKEY_INVALID: signCount 5 is not above the stored 5")
        // Another user's handle on a valid signature.
        var stranger = authenticator
        stranger.userHandle = [9, 9]
        #expect(Self.refusal { _ = try Self.assert(stranger.assertion(challenge: Self.challenge), credential: credential) }
                == "PASSKEY_INVALID: userHandle is not the credential's user")
        #expect(try Self.assert(authenticator.assertion(challenge: Self.challenge), credential: credential).signCount == 6)
    }

    @Test func zeroCountsOnBothSidesAreAcceptedAndUVIsOptionalWhenPreferred() throws {
        var authenticator = SoftPasskeyAuthenticator(userHandle: [1])
        authenticator.flags = 0b0000_0001  // UP only: no UV, no backup
        let preferred = WebAuthnVerifier(settings: PasskeySettings(relyingPartyID: "example.com", relyingPartyName: "Example",
                                                                   origins: ["https://example.com"], userVerificationRequired: false))
        let registration = try Self.register(authenticator.registration(challenge: Self.challenge), verifier: preferred)
        #expect(registration.signCount == 0 && !registration.backupEligible)
        let credential = Self.stored(authenticator, registration: registration)
        for _ in 0..<2 {
            #expect(try Self.assert(authenticator.assertion(challenge: Self.challenge, countIncrement: 0), credential: credential, verifier: preferred).signCount == 0)
        }
    }

    @Test func binaryFieldsAreBase64URLWithOrWithoutPadding() throws {
        let authenticator = SoftPasskeyAuthenticator()
        var json = authenticator.registration(challenge: Self.challenge).objectValue!
        var response = json["response"]!.objectValue!
        let clientData = response["clientDataJSON"]!.stringValue!
        response["clientDataJSON"] = .string(clientData + String(repeating: "=", count: (4 - clientData.utf8.count % 4) % 4))
        json["response"] = .object(response)
        #expect(throws: Never.self) { try Self.register(.object(json)) }
        response["clientDataJSON"] = .string(String(clientData.map { $0 == "_" ? "/" : $0 == "-" ? "+" : $0 }) + "+")
        json["response"] = .object(response)
        #expect(Self.refusal { _ = try Self.register(.object(json)) } == "INVALID_REQUEST: credential.response.clientDataJSON is not base64url")
        json["rawId"] = "AAAA"
        #expect(Self.refusal { _ = try Self.register(.object(json)) } == "INVALID_REQUEST: credential.id and credential.rawId differ")
    }
}
