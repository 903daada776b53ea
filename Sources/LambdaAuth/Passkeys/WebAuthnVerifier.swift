import Crypto

/// A `RegistrationResponseJSON` (W3C WebAuthn Level 3 §5.1.8) with its binary fields decoded.
public struct RegistrationResponse: Sendable {
    public let credentialID: [UInt8]
    public let clientDataJSON: [UInt8]
    public let clientData: CollectedClientData
    public let attestationObject: [UInt8]
    public let transports: [String]

    public init(_ credential: RequestBody) throws(AuthError) {
        let fields = WebAuthnFields(body: credential, name: "credential")
        credentialID = try fields.credentialID()
        let response = try fields.response()
        clientDataJSON = try response.binary("clientDataJSON")
        attestationObject = try response.binary("attestationObject")
        transports = try response.strings("transports")
        clientData = try CollectedClientData(clientDataJSON)
    }
}

/// An `AuthenticationResponseJSON` with its binary fields decoded.
public struct AuthenticationResponse: Sendable {
    public let credentialID: [UInt8]
    public let clientDataJSON: [UInt8]
    public let clientData: CollectedClientData
    public let authenticatorData: [UInt8]
    public let signature: [UInt8]
    public let userHandle: [UInt8]?

    public init(_ credential: RequestBody) throws(AuthError) {
        let fields = WebAuthnFields(body: credential, name: "credential")
        credentialID = try fields.credentialID()
        let response = try fields.response()
        clientDataJSON = try response.binary("clientDataJSON")
        authenticatorData = try response.binary("authenticatorData")
        signature = try response.binary("signature")
        userHandle = try response.optionalBinary("userHandle")
        clientData = try CollectedClientData(clientDataJSON)
    }
}

/// Reads the JSON forms' fields, each refusal naming its field (`credential.response.signature`).
struct WebAuthnFields {
    let body: RequestBody
    let name: String

    func optionalBinary(_ field: String) throws(AuthError) -> [UInt8]? {
        switch body.fields[field] {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let bytes = WebAuthnBase64.decode(text) else { throw AuthError(.invalidRequest, "\(name).\(field) is not base64url") }
            return bytes
        default: throw AuthError(.invalidRequest, "\(name).\(field) must be a base64url string")
        }
    }

    func binary(_ field: String) throws(AuthError) -> [UInt8] {
        guard let bytes = try optionalBinary(field), !bytes.isEmpty else { throw AuthError(.invalidRequest, "\(name).\(field) is required") }
        return bytes
    }

    func strings(_ field: String) throws(AuthError) -> [String] {
        switch body.fields[field] {
        case nil, .null?: return []
        case .array(let items)?:
            let strings = items.compactMap(\.stringValue)
            guard strings.count == items.count, strings.count <= 16, strings.allSatisfy({ $0.utf8.count <= 64 }) else {
                throw AuthError(.invalidRequest, "\(name).\(field) must be at most 16 short strings")
            }
            return strings
        default: throw AuthError(.invalidRequest, "\(name).\(field) must be an array of strings")
        }
    }

    /// `id` and `rawId` name one credential; `type` is `public-key`.
    func credentialID() throws(AuthError) -> [UInt8] {
        let id = try binary("id"), rawID = try binary("rawId")
        guard id == rawID else { throw AuthError(.invalidRequest, "\(name).id and \(name).rawId differ") }
        guard body.fields["type"] == .string("public-key") else { throw AuthError(.invalidRequest, "\(name).type must be public-key") }
        guard id.count <= AuthenticatorData.maximumCredentialIDBytes else {
            throw AuthError(.passkeyInvalid, "credential id is longer than \(AuthenticatorData.maximumCredentialIDBytes) bytes")
        }
        return id
    }

    func response() throws(AuthError) -> WebAuthnFields {
        guard let response = try body.optionalObject("response") else { throw AuthError(.invalidRequest, "\(name).response is required") }
        return WebAuthnFields(body: response, name: "\(name).response")
    }
}

/// A passkey that passed registration: what is stored.
public struct VerifiedRegistration: Sendable {
    public let credentialID: [UInt8]
    public let publicKeyBytes: [UInt8]
    public let algorithm: COSEAlgorithm
    public let signCount: UInt32
    public let backupEligible: Bool
    public let backedUp: Bool
    public let transports: [String]
    public let attestationFormat: String
}

/// What an assertion is checked against: the stored passkey.
public struct StoredCredential: Sendable {
    public let publicKeyBytes: [UInt8]
    public let signCount: UInt32
    public let userHandle: [UInt8]
    public let backupEligible: Bool

    public init(publicKeyBytes: [UInt8], signCount: UInt32, userHandle: [UInt8], backupEligible: Bool) {
        self.publicKeyBytes = publicKeyBytes
        self.signCount = signCount
        self.userHandle = userHandle
        self.backupEligible = backupEligible
    }
}

public struct VerifiedAssertion: Sendable {
    public let signCount: UInt32
    public let backedUp: Bool
    /// The authenticator verified the user (UV): with the key itself, two factors.
    public var userVerified = false
}

/// The relying party's checks of W3C WebAuthn Level 3 §7.1 "Registering a new credential" and
/// §7.2 "Verifying an authentication assertion", in the specification's order but for the
/// assertion's signature, which precedes its comparisons with the stored credential. The steps that
/// need the store (the challenge is ours and unused, the credential is new, or known and whose)
/// are the flows'; this type checks the ceremony against a challenge and a stored credential.
/// Every refusal is PASSKEY_INVALID naming the check.
public struct WebAuthnVerifier: Sendable {
    public let settings: PasskeySettings

    public init(settings: PasskeySettings) { self.settings = settings }

    static func invalid(_ check: String) -> AuthError { AuthError(.passkeyInvalid, check) }

    /// §7.1 steps 7 to 10 and §7.2 steps 10 to 13: type, challenge, origin (crossOrigin and
    /// topOrigin were refused when clientDataJSON was read).
    func checkClientData(_ clientData: CollectedClientData, type: String, challenge: [UInt8]) throws(AuthError) {
        guard clientData.type == type else { throw Self.invalid("clientDataJSON.type is not \(type)") }
        guard constantTimeEqual(clientData.challenge, challenge) else { throw Self.invalid("clientDataJSON.challenge is not this ceremony's") }
        guard settings.origins.contains(clientData.origin) else { throw Self.invalid("clientDataJSON.origin is not among AUTH_PASSKEY_ORIGINS") }
    }

    /// §7.1 steps 14 to 17 and §7.2 steps 15 to 18: rpIdHash, UP, UV, BE/BS consistency.
    func checkAuthenticatorData(_ data: AuthenticatorData) throws(AuthError) {
        guard constantTimeEqual(data.rpIDHash, settings.relyingPartyIDHash) else {
            throw Self.invalid("authenticatorData.rpIdHash is not SHA-256 of AUTH_PASSKEY_RP_ID")
        }
        guard data.flags.contains(.userPresent) else { throw Self.invalid("user presence (UP) is not set") }
        if settings.userVerificationRequired, !data.flags.contains(.userVerified) {
            throw Self.invalid("user verification (UV) is not set and AUTH_PASSKEY_USER_VERIFICATION is required")
        }
        if data.flags.contains(.backedUp), !data.flags.contains(.backupEligible) {
            throw Self.invalid("backup state (BS) is set without backup eligibility (BE)")
        }
    }

    public func verifyRegistration(_ response: RegistrationResponse, challenge: [UInt8]) throws(AuthError) -> VerifiedRegistration {
        try checkClientData(response.clientData, type: "webauthn.create", challenge: challenge)
        let clientDataHash = Array(SHA256.hash(data: response.clientDataJSON))
        let attestation: CBORValue
        do { attestation = try CBORDecoder().decode(response.attestationObject) } catch {
            throw Self.invalid("attestationObject is not CBOR (\(error))")
        }
        guard let entries = attestation.mapEntries, entries.count == 3, let format = attestation["fmt"]?.textValue,
              let authDataBytes = attestation["authData"]?.bytesValue, let statement = attestation["attStmt"], statement.mapEntries != nil else {
            throw Self.invalid("attestationObject is not {fmt, authData, attStmt}")
        }
        let authData = try AuthenticatorData(authDataBytes)
        try checkAuthenticatorData(authData)
        guard let credential = authData.attestedCredential else { throw Self.invalid("authenticatorData has no attested credential data (AT)") }
        guard credential.credentialID == response.credentialID else { throw Self.invalid("credential id differs from the attested credential's") }
        try verifyAttestationStatement(format: format, statement: statement, authData: authData, credential: credential,
                                       clientDataHash: clientDataHash)
        return VerifiedRegistration(credentialID: credential.credentialID, publicKeyBytes: credential.publicKeyBytes,
                                    algorithm: credential.publicKey.algorithm, signCount: authData.signCount,
                                    backupEligible: authData.flags.contains(.backupEligible), backedUp: authData.flags.contains(.backedUp),
                                    transports: response.transports, attestationFormat: format)
    }

    /// §8.7 `none` and §8.2 `packed`; no trust evaluation of x5c (contract section 15).
    func verifyAttestationStatement(format: String, statement: CBORValue, authData: AuthenticatorData,
                                    credential: AuthenticatorData.AttestedCredential, clientDataHash: [UInt8]) throws(AuthError) {
        switch format {
        case "none":
            guard statement.mapEntries?.isEmpty == true else { throw Self.invalid("attestation none has a non-empty attStmt") }
        case "packed":
            guard let algorithm = statement["alg"]?.integerValue, let signature = statement["sig"]?.bytesValue else {
                throw Self.invalid("packed attStmt lacks alg or sig")
            }
            let signed = authData.bytes + clientDataHash
            if let chain = statement["x5c"] {
                guard statement.mapEntries?.count == 3, let certificates = chain.arrayValue, let leaf = certificates.first?.bytesValue,
                      certificates.allSatisfy({ $0.bytesValue != nil }) else {
                    throw Self.invalid("packed attStmt x5c is not a non-empty array of certificates")
                }
                // §8.2 step 2: the leaf's key, of the statement's algorithm, signed; §8.2.1's
                // requirements of the leaf and its AAGUID extension.
                let certificate: AttestationCertificate
                do { certificate = try AttestationCertificate(der: leaf) } catch {
                    throw Self.invalid("packed x5c leaf certificate is not X.509 DER: \(error.reason)")
                }
                guard let coseAlgorithm = COSEAlgorithm(rawValue: algorithm) else {
                    throw Self.invalid("packed x5c alg \(algorithm) is not ES256 (-7), EdDSA (-8) or RS256 (-257)")
                }
                let key: COSEPublicKey
                do { key = try COSEPublicKey(algorithm: coseAlgorithm, certificate: certificate) } catch {
                    throw Self.invalid("packed x5c: \(error.description)")
                }
                guard key.isValidSignature(signature, for: signed) else {
                    throw Self.invalid("packed attestation signature does not verify under the x5c leaf key")
                }
                if let unmet = certificate.unmetRequirement(aaguid: credential.aaguid) {
                    throw Self.invalid("packed x5c leaf certificate \(unmet) (WebAuthn §8.2.1)")
                }
            } else {
                guard statement.mapEntries?.count == 2 else { throw Self.invalid("packed attStmt has members other than alg and sig") }
                guard algorithm == credential.publicKey.algorithm.rawValue else {
                    throw Self.invalid("packed self attestation alg \(algorithm) is not the credential key's")
                }
                guard credential.publicKey.isValidSignature(signature, for: signed) else {
                    throw Self.invalid("packed self attestation signature does not verify under the credential key")
                }
            }
        default:
            throw Self.invalid("attestation format \(format) is not none or packed")
        }
    }

    /// What an unknown credential and a bad signature both answer: which one it was is not told.
    public static let unknownOrBadSignature = invalid("the credential is unknown or its signature does not verify")

    /// §7.2 steps 6 and 10 to 23. The checks that need no stored credential run first, for a known
    /// and an unknown credential alike (nil: none is stored under the presented id). Then the
    /// signature, before anything compared with the stored credential: a refusal that named its
    /// userHandle or BE flag would tell whoever presents a guessed or harvested credential id
    /// that it is registered (contract section 15), so until the signature verifies every
    /// failure is `unknownOrBadSignature`. The later messages go only to the key's holder.
    public func verifyAssertion(_ response: AuthenticationResponse, challenge: [UInt8],
                                credential: StoredCredential?) throws(AuthError) -> VerifiedAssertion {
        try checkClientData(response.clientData, type: "webauthn.get", challenge: challenge)
        let authData = try AuthenticatorData(response.authenticatorData)
        try checkAuthenticatorData(authData)
        guard authData.attestedCredential == nil else { throw Self.invalid("an assertion's authenticatorData carries attested credential data") }
        guard let credential else { throw Self.unknownOrBadSignature }
        let key: COSEPublicKey
        do { key = try COSEPublicKey(encoded: credential.publicKeyBytes) } catch {
            throw .internalError("stored passkey key: \(error)")
        }
        let signed = response.authenticatorData + Array(SHA256.hash(data: response.clientDataJSON))
        guard key.isValidSignature(response.signature, for: signed) else { throw Self.unknownOrBadSignature }
        // Step 6: a discoverable credential names its user; it must be the credential's. The
        // handle is not among the signed bytes: a valid signature says nothing of it.
        guard let userHandle = response.userHandle else { throw Self.invalid("userHandle is missing") }
        guard constantTimeEqual(userHandle, credential.userHandle) else { throw Self.invalid("userHandle is not the credential's user") }
        // Step 18: a credential's backup eligibility never changes.
        guard authData.flags.contains(.backupEligible) == credential.backupEligible else {
            throw Self.invalid("backup eligibility (BE) differs from the registered passkey's")
        }
        // Step 22: a count that does not grow means a cloned authenticator, unless neither counts.
        if authData.signCount != 0 || credential.signCount != 0, authData.signCount <= credential.signCount {
            throw Self.invalid("signCount \(authData.signCount) is not above the stored \(credential.signCount)")
        }
        return VerifiedAssertion(signCount: authData.signCount, backedUp: authData.flags.contains(.backedUp),
                                 userVerified: authData.flags.contains(.userVerified))
    }
}
