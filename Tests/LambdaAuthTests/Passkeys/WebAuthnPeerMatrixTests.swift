import Crypto
import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Our verifier and Yubico's python-fido2 (Tests/Scripts/webauthn_check.py) decide the same
/// generated matrix alike, and as the specification says: ES256, EdDSA and RS256; attestation
/// none and packed self; UV on and off under AUTH_PASSKEY_USER_VERIFICATION=required; counters
/// zero, increasing and regressing; and the hostile cases of a wrong origin, a wrong RP ID and a
/// flipped signature byte. Everything one accepts the other accepts.
@Suite struct WebAuthnPeerMatrixTests {
    static let challenge: [UInt8] = (0..<32).map { UInt8($0) }
    static let verifier = WebAuthnVerifier(settings: PasskeySettings(relyingPartyID: "example.com", relyingPartyName: "Example",
                                                                     origins: ["https://example.com"], userVerificationRequired: true))

    struct Case {
        var name: String
        var peerCase: JSONValue
        var ours: Bool
        var expected: Bool
    }

    static func fido2Verdicts(_ cases: [JSONValue]) throws -> [String] {
        let python = TestSupport.packageRoot + "/.build/webauthn-peers/bin/python"
        let output = try ProcessRunner.run(python, arguments: [TestSupport.packageRoot + "/Tests/Scripts/webauthn_check.py"],
                                           environment: Environment.current(), stdin: JSONValue.array(cases).serializedBytes())
        let verdicts = try #require(output.exitCode == 0 ? output.json?.arrayValue : nil,
                                    "webauthn_check.py: \(output.stderrText) (run Tests/Scripts/prerequisites.sh test)")
        return verdicts.compactMap(\.stringValue)
    }

    static func accepted(_ body: () throws -> Void) -> Bool {
        do { try body(); return true } catch { return false }
    }

    static func registrationCase(_ name: String, _ credential: JSONValue, expected: Bool) -> Case {
        let ours = accepted { _ = try verifier.verifyRegistration(try RegistrationResponse(RequestBody(credential.objectValue!)), challenge: challenge) }
        let peer: JSONValue = ["kind": "registration", "rpId": "example.com", "origin": "https://example.com", "userVerification": "required",
                               "challenge": .string(Base64.urlEncoded(challenge)), "credential": credential]
        return Case(name: name, peerCase: peer, ours: ours, expected: expected)
    }

    static func cases() throws -> [Case] {
        var cases: [Case] = []
        for algorithm in COSEAlgorithm.allCases {
            for attestation in [SoftPasskeyAuthenticator.Attestation.none, .packedSelf] {
                for userVerified in [true, false] {
                    var authenticator = SoftPasskeyAuthenticator(algorithm: algorithm, userHandle: [1])
                    authenticator.flags = userVerified ? 0b0000_0101 : 0b0000_0001
                    cases.append(registrationCase("register \(algorithm) \(attestation) UV \(userVerified)",
                                                  authenticator.registration(challenge: challenge, attestation: attestation), expected: userVerified))
                }
            }
            var authenticator = SoftPasskeyAuthenticator(algorithm: algorithm, userHandle: [1])
            authenticator.flags = 0b0000_0101
            let registration = try verifier.verifyRegistration(
                try RegistrationResponse(RequestBody(authenticator.registration(challenge: challenge).objectValue!)), challenge: challenge)
            let origin = authenticator.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: "https://evil.example")
            cases.append(registrationCase("register \(algorithm) wrong origin", authenticator.registration(challenge: challenge, clientDataJSON: origin), expected: false))
            cases.append(registrationCase("register \(algorithm) wrong RP ID",
                                          authenticator.registration(challenge: challenge, authenticatorData: authenticator.authenticatorData(attested: true, rpID: "evil.example")),
                                          expected: false))
            let counters: [(String, stored: UInt32, start: UInt32, step: UInt32, fine: Bool)] = [
                ("zero", 0, 0, 0, true), ("increasing", 5, 5, 1, true), ("regressing", 5, 2, 1, false)]
            for userVerified in [true, false] {
                for (counterName, stored, start, step, fine) in counters {
                    for flipped in [false, true] where !flipped || counterName == "increasing" {
                        var signer = authenticator
                        signer.flags = userVerified ? 0b0000_0101 : 0b0000_0001
                        signer.signCount = start
                        let credential = signer.assertion(challenge: challenge, countIncrement: step, corruptSignature: flipped)
                        let stored = StoredCredential(publicKeyBytes: registration.publicKeyBytes, signCount: stored, userHandle: [1], backupEligible: false)
                        let ours = accepted { _ = try verifier.verifyAssertion(try AuthenticationResponse(RequestBody(credential.objectValue!)),
                                                                               challenge: challenge, credential: stored) }
                        let peer: JSONValue = ["kind": "assertion", "rpId": "example.com", "origin": "https://example.com", "userVerification": "required",
                                               "challenge": .string(Base64.urlEncoded(challenge)), "credential": credential,
                                               "publicKey": .string(Base64.urlEncoded(registration.publicKeyBytes)), "storedSignCount": .number(Int64(stored.signCount))]
                        cases.append(Case(name: "assert \(algorithm) UV \(userVerified) count \(counterName)\(flipped ? " flipped signature" : "")",
                                          peerCase: peer, ours: ours, expected: userVerified && fine && !flipped))
                    }
                }
            }
        }
        return cases
    }

    /// Packed attestation with an x5c leaf made by `cryptography` (Tests/Scripts/attestation_certificate.py):
    /// signed by the leaf's key, both accept; signed by the credential key instead, both refuse.
    @Test func packedX5CIsCheckedAgainstTheLeafKey() throws {
        let python = TestSupport.packageRoot + "/.build/webauthn-peers/bin/python"
        let made = try ProcessRunner.run(python, arguments: [TestSupport.packageRoot + "/Tests/Scripts/attestation_certificate.py"],
                                         environment: Environment.current())
        let output = try #require(made.exitCode == 0 ? made.json : nil, "attestation_certificate.py: \(made.stderrText)")
        let certificate = try #require(output["certificate"]?.stringValue.flatMap(Base64.urlDecoded))
        let leafKey = try P256.Signing.PrivateKey(derRepresentation: try #require(output["privateKey"]?.stringValue.flatMap(Base64.urlDecoded)))
        var authenticator = SoftPasskeyAuthenticator(userHandle: [1])
        authenticator.flags = 0b0000_0101
        let authData = authenticator.authenticatorData(attested: true)
        let clientData = authenticator.clientDataJSON(type: "webauthn.create", challenge: Self.challenge)
        let signed = authData + Array(SHA256.hash(data: clientData))
        func credential(signature: [UInt8], chain: [[UInt8]]) -> JSONValue {
            let statement = TestCBOR.map([(.text("alg"), .int(-7)), (.text("sig"), .bytes(signature)), (.text("x5c"), .array(chain.map(TestCBOR.bytes)))])
            let object = TestCBOR.map([(.text("fmt"), .text("packed")), (.text("attStmt"), statement), (.text("authData"), .bytes(authData))]).encoded
            return authenticator.registration(challenge: Self.challenge, clientDataJSON: clientData, authenticatorData: authData, attestationObject: object)
        }
        let byLeaf = Array(try leafKey.signature(for: SHA256.hash(data: signed)).derRepresentation)
        let cases = [Self.registrationCase("x5c signed by the leaf", credential(signature: byLeaf, chain: [certificate]), expected: true),
                     Self.registrationCase("x5c signed by the credential key", credential(signature: authenticator.sign(signed), chain: [certificate]), expected: false),
                     Self.registrationCase("x5c without a key", credential(signature: byLeaf, chain: [Array(certificate.prefix(40))]), expected: false)]
        let verdicts = try Self.fido2Verdicts(cases.map(\.peerCase))
        for (item, verdict) in zip(cases, verdicts) {
            #expect(item.ours == item.expected, "\(item.name): ours \(item.ours ? "accepts" : "refuses")")
            #expect((verdict == "accept") == item.expected, "\(item.name): fido2 \(verdict)")
        }
    }

    @Test func fido2AndWeDecideTheMatrixAlikeAndRight() throws {
        let cases = try Self.cases()
        let verdicts = try Self.fido2Verdicts(cases.map(\.peerCase))
        try #require(verdicts.count == cases.count)
        for (item, verdict) in zip(cases, verdicts) {
            #expect(item.ours == item.expected, "\(item.name): ours \(item.ours ? "accepts" : "refuses")")
            #expect((verdict == "accept") == item.expected, "\(item.name): fido2 \(verdict)")
            // fido2 refuses for the reason the case is about, not for one of its own.
            if item.name.hasSuffix("flipped signature") && item.name.contains("UV true") { #expect(verdict.contains("Invalid signature"), "\(item.name): \(verdict)") }
            if item.name.contains("UV false") { #expect(verdict.contains("User verification required"), "\(item.name): \(verdict)") }
            if item.name.hasSuffix("wrong RP ID") { #expect(verdict.contains("Wrong RP ID hash"), "\(item.name): \(verdict)") }
            if item.name.hasSuffix("regressing") && item.name.contains("UV true") { #expect(verdict.contains("sign count"), "\(item.name): \(verdict)") }
        }
        #expect(cases.filter(\.expected).count >= 12 && cases.filter { !$0.expected }.count >= 12, "both outcomes well represented")
    }
}
