import Crypto
import CryptoExtras
import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Our verifier, Yubico's python-fido2 (Tests/Scripts/webauthn_check.py) and Duo Labs' py_webauthn
/// (Tests/Scripts/pywebauthn_check.py) decide the same generated matrix alike, and as the
/// specification says: ES256, EdDSA and RS256; attestation none and packed self; UV on and off
/// under AUTH_PASSKEY_USER_VERIFICATION=required; counters zero, increasing and regressing; and the
/// hostile cases of a wrong origin, a wrong RP ID and a flipped signature byte. Everything a peer
/// accepts we accept, and everything we accept both peers accept.
@Suite struct WebAuthnPeerMatrixTests {
    static let challenge: [UInt8] = (0..<32).map { UInt8($0) }

    /// Our verifier under AUTH_PASSKEY_USER_VERIFICATION=required, or =preferred.
    static func verifier(userVerificationRequired: Bool) -> WebAuthnVerifier {
        WebAuthnVerifier(settings: PasskeySettings(relyingPartyID: "example.com", relyingPartyName: "Example",
                                                   origins: ["https://example.com"], userVerificationRequired: userVerificationRequired))
    }

    /// The one check a refused case fails, so that each peer can be held to refusing for it.
    enum Check { case userVerification, signature, rpIDHash, origin, signCount, attestationSignature, certificate, leafRequirements }

    struct Case {
        var name: String
        var peerCase: JSONValue
        var ours: Bool
        var expected: Bool
        var fails: Check? = nil
    }

    /// A peer script's verdicts on `cases`, in order ("accept" or "refuse: <type>: <reason>").
    static func verdicts(_ peer: Peer, _ cases: [JSONValue]) throws -> [String] {
        let python = TestSupport.packageRoot + "/.build/\(peer.environment)/bin/python"
        try #require(FileSystem.exists(python), "\(peer) is not installed: run Tests/Scripts/prerequisites.sh test")
        let output = try ProcessRunner.run(python, arguments: [TestSupport.packageRoot + "/Tests/Scripts/\(peer.script)"],
                                           environment: Environment.current(), stdin: JSONValue.array(cases).serializedBytes())
        let verdicts = try #require(output.exitCode == 0 ? output.json?.arrayValue : nil,
                                    "\(peer.script): \(output.stderrText) (run Tests/Scripts/prerequisites.sh test)")
        try #require(verdicts.count == cases.count, "\(peer.script): \(verdicts.count) verdicts for \(cases.count) cases")
        return verdicts.compactMap(\.stringValue)
    }

    /// The two relying parties nobody here wrote, each in the virtual environment prerequisites.sh makes for it.
    enum Peer: CaseIterable, CustomStringConvertible {
        case fido2, pyWebAuthn

        var script: String { self == .fido2 ? "webauthn_check.py" : "pywebauthn_check.py" }
        var environment: String { self == .fido2 ? "webauthn-peers" : "py-webauthn-peer" }
        var description: String { self == .fido2 ? "fido2" : "py_webauthn" }

        /// What this peer's refusal says when it refuses for `check`, in its own words; nil where it
        /// does not make that check.
        func refusal(_ check: Check) -> String? {
            switch check {
            case .userVerification: self == .fido2 ? "User verification required" : "User verification is required"
            case .signature: self == .fido2 ? "Invalid signature" : "Could not verify authentication signature"
            case .rpIDHash: self == .fido2 ? "Wrong RP ID hash" : "Unexpected RP ID hash"
            case .origin: self == .fido2 ? "Invalid origin" : "Unexpected client data origin"
            case .signCount: self == .fido2 ? "sign count" : "was not greater than current count"
            case .attestationSignature: self == .fido2 ? "InvalidSignature" : "Could not verify attestation statement signature"
            case .certificate: "error parsing asn1 value"  // both through cryptography's certificate parser
            case .leafRequirements: self == .fido2 ? "Subject must have C set" : nil
            }
        }
    }

    /// Ours and each peer accept exactly the cases the specification accepts (so everything a peer
    /// accepts we accept, and everything we accept it accepts), and a peer refuses for the reason
    /// the case is about, not for one of its own.
    static func expectAllDecideAsTheSpecificationSays(_ cases: [Case]) throws {
        for item in cases { #expect(item.ours == item.expected, "\(item.name): ours \(item.ours ? "accepts" : "refuses")") }
        for peer in Peer.allCases {
            for (item, verdict) in zip(cases, try verdicts(peer, cases.map(\.peerCase))) {
                #expect((verdict == "accept") == item.expected, "\(item.name): \(peer) \(verdict)")
                if let refusal = item.fails.flatMap(peer.refusal) { #expect(verdict.contains(refusal), "\(item.name): \(peer) \(verdict)") }
            }
        }
    }

    static func accepted(_ body: () throws -> Void) -> Bool {
        do { try body(); return true } catch { return false }
    }

    /// Our verifier's message refusing a registration case (UV required); nil when it accepts.
    static func ourRefusal(_ item: Case) -> String? {
        do {
            let credential = try RegistrationResponse(RequestBody(item.peerCase["credential"]?.objectValue ?? [:]))
            _ = try verifier(userVerificationRequired: true).verifyRegistration(credential, challenge: challenge)
            return nil
        } catch {
            return error.message
        }
    }

    /// What a peer script is given: the ceremony and the relying party's expectations, and for an
    /// assertion the stored key and count (`stored`).
    static func peerCase(_ kind: String, userVerificationRequired: Bool, _ credential: JSONValue, stored: [String: JSONValue] = [:]) -> JSONValue {
        let expectations: [String: JSONValue] = [
            "kind": .string(kind), "rpId": "example.com", "origin": "https://example.com", "userVerification": userVerificationRequired ? "required" : "preferred",
            "challenge": .string(Base64.urlEncoded(challenge)), "credential": credential]
        return .object(expectations.merging(stored) { $1 })
    }

    static func registrationCase(_ name: String, _ credential: JSONValue, userVerificationRequired: Bool = true, fails: Check?) -> Case {
        let verifier = verifier(userVerificationRequired: userVerificationRequired)
        let ours = accepted { _ = try verifier.verifyRegistration(try RegistrationResponse(RequestBody(credential.objectValue!)), challenge: challenge) }
        return Case(name: name, peerCase: peerCase("registration", userVerificationRequired: userVerificationRequired, credential),
                    ours: ours, expected: fails == nil, fails: fails)
    }

    /// The matrix: each algorithm, attestation none and packed self, UV on and off under each
    /// policy, and counters zero, increasing and regressing; then the hostile cases.
    static func cases() throws -> [Case] {
        var cases: [Case] = []
        let policies = [(required: true, name: "required"), (required: false, name: "preferred")]
        for algorithm in COSEAlgorithm.allCases {
            for attestation in [SoftPasskeyAuthenticator.Attestation.none, .packedSelf] {
                for userVerified in [true, false] {
                    var authenticator = SoftPasskeyAuthenticator(algorithm: algorithm, userHandle: [1])
                    authenticator.flags = userVerified ? 0b0000_0101 : 0b0000_0001
                    for policy in policies {
                        cases.append(registrationCase("register \(algorithm) \(attestation) UV \(userVerified), UV \(policy.name)",
                                                      authenticator.registration(challenge: challenge, attestation: attestation),
                                                      userVerificationRequired: policy.required,
                                                      fails: !userVerified && policy.required ? .userVerification : nil))
                    }
                }
            }
            var authenticator = SoftPasskeyAuthenticator(algorithm: algorithm, userHandle: [1])
            authenticator.flags = 0b0000_0101
            let registration = try verifier(userVerificationRequired: true).verifyRegistration(
                try RegistrationResponse(RequestBody(authenticator.registration(challenge: challenge).objectValue!)), challenge: challenge)
            let origin = authenticator.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: "https://evil.example")
            cases.append(registrationCase("register \(algorithm) wrong origin", authenticator.registration(challenge: challenge, clientDataJSON: origin), fails: .origin))
            cases.append(registrationCase("register \(algorithm) wrong RP ID",
                                          authenticator.registration(challenge: challenge, authenticatorData: authenticator.authenticatorData(attested: true, rpID: "evil.example")),
                                          fails: .rpIDHash))
            let counters: [(String, stored: UInt32, start: UInt32, step: UInt32, fine: Bool)] = [
                ("zero", 0, 0, 0, true), ("increasing", 5, 5, 1, true), ("regressing", 5, 2, 1, false)]
            for userVerified in [true, false] {
                for policy in policies {
                    let verifier = verifier(userVerificationRequired: policy.required)
                    for (counterName, stored, start, step, fine) in counters {
                        for flipped in [false, true] where !flipped || counterName == "increasing" {
                            var signer = authenticator
                            signer.flags = userVerified ? 0b0000_0101 : 0b0000_0001
                            signer.signCount = start
                            let credential = signer.assertion(challenge: challenge, countIncrement: step, corruptSignature: flipped)
                            let stored = StoredCredential(publicKeyBytes: registration.publicKeyBytes, signCount: stored, userHandle: [1], backupEligible: false)
                            let ours = accepted { _ = try verifier.verifyAssertion(try AuthenticationResponse(RequestBody(credential.objectValue!)),
                                                                                   challenge: challenge, credential: stored) }
                            let peer = peerCase("assertion", userVerificationRequired: policy.required, credential,
                                                stored: ["publicKey": .string(Base64.urlEncoded(registration.publicKeyBytes)),
                                                         "storedSignCount": .number(Int64(stored.signCount))])
                            // The checks in the order all three make them: UV, then the count, then the signature.
                            let fails: Check? = !userVerified && policy.required ? .userVerification : !fine ? .signCount : flipped ? .signature : nil
                            cases.append(Case(name: "assert \(algorithm) UV \(userVerified), UV \(policy.name), count \(counterName)\(flipped ? ", flipped signature" : "")",
                                              peerCase: peer, ours: ours, expected: fails == nil, fails: fails))
                        }
                    }
                }
            }
        }
        return cases
    }

    /// An attestation certificate's private key, signing as WebAuthn's algorithms do.
    enum LeafKey {
        case p256(P256.Signing.PrivateKey), rsa(_RSA.Signing.PrivateKey), ed25519(Curve25519.Signing.PrivateKey)

        var algorithm: COSEAlgorithm {
            switch self {
            case .p256: .es256
            case .rsa: .rs256
            case .ed25519: .edDSA
            }
        }

        func sign(_ message: [UInt8]) throws -> [UInt8] {
            switch self {
            case .p256(let key): Array(try key.signature(for: SHA256.hash(data: message)).derRepresentation)
            case .rsa(let key): Array(try key.signature(for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5).rawRepresentation)
            case .ed25519(let key): Array(try key.signature(for: message))
            }
        }
    }

    /// An attestation certificate and its key, made by `cryptography` (Tests/Scripts/attestation_certificate.py):
    /// with §8.2.1's requirements, or with the script's `variants` (one broken or added each; `key=rsa`
    /// or `key=ed25519` for another kind of leaf than P-256).
    static func attestationCertificate(_ variants: [String] = []) throws -> (certificate: [UInt8], key: LeafKey) {
        let python = TestSupport.packageRoot + "/.build/webauthn-peers/bin/python"
        let made = try ProcessRunner.run(python, arguments: [TestSupport.packageRoot + "/Tests/Scripts/attestation_certificate.py"] + variants,
                                         environment: Environment.current())
        let output = try #require(made.exitCode == 0 ? made.json : nil, "attestation_certificate.py: \(made.stderrText)")
        let certificate = try #require(output["certificate"]?.stringValue.flatMap(Base64.urlDecoded))
        let pkcs8 = try #require(output["privateKey"]?.stringValue.flatMap(Base64.urlDecoded))
        if variants.contains("key=rsa") { return (certificate, .rsa(try _RSA.Signing.PrivateKey(derRepresentation: pkcs8))) }
        if variants.contains("key=ed25519") {
            let raw = try #require(output["privateKeyRaw"]?.stringValue.flatMap(Base64.urlDecoded))
            return (certificate, .ed25519(try Curve25519.Signing.PrivateKey(rawRepresentation: raw)))
        }
        return (certificate, .p256(try P256.Signing.PrivateKey(derRepresentation: pkcs8)))
    }

    /// A registration with packed x5c attestation: `chain`, and a signature by the leaf's key (or
    /// the credential's) over authenticatorData ‖ SHA-256(clientDataJSON), under `alg` (the leaf
    /// key's algorithm unless said).
    static func x5cRegistration(_ name: String, chain: [[UInt8]], leafKey: LeafKey, signedByTheCredentialKey: Bool = false,
                                alg: COSEAlgorithm? = nil, fails: Check?) throws -> Case {
        var authenticator = SoftPasskeyAuthenticator(userHandle: [1])
        authenticator.flags = 0b0000_0101
        let authData = authenticator.authenticatorData(attested: true)
        let clientData = authenticator.clientDataJSON(type: "webauthn.create", challenge: challenge)
        let signed = authData + Array(SHA256.hash(data: clientData))
        let signature = signedByTheCredentialKey ? authenticator.sign(signed) : try leafKey.sign(signed)
        let statement = TestCBOR.map([(.text("alg"), .int((alg ?? leafKey.algorithm).rawValue)), (.text("sig"), .bytes(signature)),
                                      (.text("x5c"), .array(chain.map(TestCBOR.bytes)))])
        let object = TestCBOR.map([(.text("fmt"), .text("packed")), (.text("attStmt"), statement), (.text("authData"), .bytes(authData))]).encoded
        return registrationCase(name, authenticator.registration(challenge: challenge, clientDataJSON: clientData, authenticatorData: authData,
                                                                 attestationObject: object), fails: fails)
    }

    /// Packed x5c without trust evaluation (py_webauthn, given no root certificates, skips the chain
    /// as we do): signed by the leaf's key, all accept; signed by the credential key instead, or
    /// with a truncated certificate, all refuse.
    @Test func packedX5CIsCheckedAgainstTheLeafKey() throws {
        let (certificate, key) = try Self.attestationCertificate()
        try Self.expectAllDecideAsTheSpecificationSays([
            try Self.x5cRegistration("x5c signed by the leaf", chain: [certificate], leafKey: key, fails: nil),
            try Self.x5cRegistration("x5c signed by the credential key", chain: [certificate], leafKey: key, signedByTheCredentialKey: true,
                                     fails: .attestationSignature),
            try Self.x5cRegistration("x5c without a key", chain: [Array(certificate.prefix(40))], leafKey: key, fails: .certificate),
        ])
    }

    /// Leaves of the other two algorithms (§8.2: the statement's alg names the leaf key's): an RSA
    /// leaf under RS256 and an Ed25519 leaf under EdDSA, all three accept. Under an alg that is not
    /// its key's, ours and python-fido2 refuse; py_webauthn 3.x refuses the RSA leaf under ES256
    /// but verifies the Ed25519 leaf's signature whatever alg says and accepts it: there it misses
    /// §8.2's "alg matches the algorithm of the subjectPublicKey", and we side with the spec.
    @Test func packedX5CLeavesOfEveryAlgorithm() throws {
        let (rsaCertificate, rsaKey) = try Self.attestationCertificate(["key=rsa"])
        let (edCertificate, edKey) = try Self.attestationCertificate(["key=ed25519"])
        try Self.expectAllDecideAsTheSpecificationSays([
            try Self.x5cRegistration("x5c RSA leaf, RS256", chain: [rsaCertificate], leafKey: rsaKey, fails: nil),
            try Self.x5cRegistration("x5c Ed25519 leaf, EdDSA", chain: [edCertificate], leafKey: edKey, fails: nil),
        ])
        let mismatched = [try Self.x5cRegistration("x5c RSA leaf, alg ES256", chain: [rsaCertificate], leafKey: rsaKey, alg: .es256, fails: .attestationSignature),
                          try Self.x5cRegistration("x5c Ed25519 leaf, alg RS256", chain: [edCertificate], leafKey: edKey, alg: .rs256, fails: .attestationSignature)]
        #expect(mismatched.map(\.ours) == [false, false])
        #expect(mismatched.map { Self.ourRefusal($0)?.contains("is not of the kind alg") == true } == [true, true])
        #expect(try Self.verdicts(.fido2, mismatched.map(\.peerCase)).map { $0.hasPrefix("refuse") } == [true, true])
        let pyWebAuthn = try Self.verdicts(.pyWebAuthn, mismatched.map(\.peerCase))
        #expect(pyWebAuthn.first?.hasPrefix("refuse") == true && pyWebAuthn.last == "accept", "py_webauthn: \(pyWebAuthn)")
    }

    /// §8.2's packed x5c procedure has the relying party check the leaf against §8.2.1 (version 3;
    /// subject C, O, OU "Authenticator Attestation", CN; Basic Constraints CA false) and an
    /// id-fido-gen-ce-aaguid extension, when there is one, against authenticatorData's AAGUID (not
    /// critical). Ours and python-fido2 decide each variant alike and as the specification says.
    /// py_webauthn 3.x checks none of these and accepts them all: where the peers disagree, we
    /// side with the specification and fido2 (docs/passkeys.md).
    @Test(arguments: [
        (variants: [String](), accepted: true, reason: nil as String?),
        (["aaguid=00000000000000000000000000000000"], true, nil),
        (["bare"], false, "has no two-letter subject C"),
        (["ou=Marketing"], false, "has no subject OU \"Authenticator Attestation\""),
        (["ca"], false, "is a CA (Basic Constraints)"),
        (["no-constraints"], false, "has no Basic Constraints"),
        (["aaguid=0102030405060708090a0b0c0d0e0f10"], false, "has an AAGUID extension that is not authenticatorData's AAGUID"),
        (["aaguid-critical=00000000000000000000000000000000"], false, "marks its AAGUID extension critical"),
    ])
    func packedX5CLeafMeetsSection821(variants: [String], accepted: Bool, reason: String?) throws {
        let (certificate, key) = try Self.attestationCertificate(variants)
        let item = try Self.x5cRegistration("x5c leaf \(variants)", chain: [certificate], leafKey: key, fails: accepted ? nil : .leafRequirements)
        #expect(item.ours == accepted)
        let fido2 = try Self.verdicts(.fido2, [item.peerCase])
        #expect((fido2 == ["accept"]) == accepted, "python-fido2: \(fido2)")
        #expect(try Self.verdicts(.pyWebAuthn, [item.peerCase]) == ["accept"], "py_webauthn 3.x checks no §8.2.1 requirement")
        if let reason {
            let refusal = Self.ourRefusal(item)
            #expect(refusal?.contains("packed x5c leaf certificate \(reason) (WebAuthn §8.2.1)") == true, "ours: \(refusal ?? "accepted")")
        }
    }

    @Test func bothPeersAndWeDecideTheMatrixAlikeAndRight() throws {
        let cases = try Self.cases()
        try Self.expectAllDecideAsTheSpecificationSays(cases)
        #expect(cases.filter(\.expected).count >= 12 && cases.filter { !$0.expected }.count >= 12, "both outcomes well represented")
    }
}
