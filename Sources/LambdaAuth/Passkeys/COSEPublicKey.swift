import Crypto
import CryptoExtras

/// The COSE algorithms a passkey may use (contract section 15: the options' pubKeyCredParams).
public enum COSEAlgorithm: Int64, CaseIterable, Sendable {
    case es256 = -7
    case edDSA = -8
    case rs256 = -257
}

/// A credential public key in COSE_Key form (RFC 9052 §7, key types of RFC 9053 §2 and RFC 8230),
/// as authenticator data carries it. Only the three algorithms above, with the parameters each
/// requires; anything else is refused with the reason.
public struct COSEPublicKey: Sendable {
    enum Material: Sendable {
        case p256(P256.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey)
    }

    public let algorithm: COSEAlgorithm
    let material: Material

    /// Labels of RFC 9052 §7.1 and RFC 9053 §7.
    enum Label {
        static let keyType: Int64 = 1, algorithm: Int64 = 3
        static let curve: Int64 = -1, x: Int64 = -2, y: Int64 = -3
        static let modulus: Int64 = -1, exponent: Int64 = -2
    }

    /// The key `cbor` describes; the error names what is wrong with it.
    public init(_ cbor: CBORValue) throws(COSEKeyError) {
        guard cbor.mapEntries != nil else { throw COSEKeyError("the key is not a map") }
        guard let keyType = cbor[Label.keyType]?.integerValue else { throw COSEKeyError("kty (1) is missing or not an integer") }
        guard let label = cbor[Label.algorithm]?.integerValue else { throw COSEKeyError("alg (3) is missing or not an integer") }
        guard let algorithm = COSEAlgorithm(rawValue: label) else { throw COSEKeyError("alg \(label) is not ES256 (-7), EdDSA (-8) or RS256 (-257)") }
        func bytes(_ label: Int64, _ name: String, count: Int? = nil) throws(COSEKeyError) -> [UInt8] {
            guard let value = cbor[label]?.bytesValue, !value.isEmpty else { throw COSEKeyError("\(name) (\(label)) is missing or not a byte string") }
            if let count, value.count != count { throw COSEKeyError("\(name) (\(label)) is \(value.count) bytes, not \(count)") }
            return value
        }
        switch algorithm {
        case .es256:
            guard keyType == 2 else { throw COSEKeyError("ES256 needs kty EC2 (2), not \(keyType)") }
            guard cbor[Label.curve]?.integerValue == 1 else { throw COSEKeyError("ES256 needs crv P-256 (1)") }
            let point = try bytes(Label.x, "x", count: 32) + bytes(Label.y, "y", count: 32)
            // swift-crypto checks that the point is on the curve.
            guard let key = try? P256.Signing.PublicKey(rawRepresentation: point) else { throw COSEKeyError("x, y is not a P-256 point") }
            material = .p256(key)
        case .edDSA:
            guard keyType == 1 else { throw COSEKeyError("EdDSA needs kty OKP (1), not \(keyType)") }
            guard cbor[Label.curve]?.integerValue == 6 else { throw COSEKeyError("EdDSA needs crv Ed25519 (6)") }
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: try bytes(Label.x, "x", count: 32)) else {
                throw COSEKeyError("x is not an Ed25519 public key")
            }
            material = .ed25519(key)
        case .rs256:
            guard keyType == 3 else { throw COSEKeyError("RS256 needs kty RSA (3), not \(keyType)") }
            let modulus = try bytes(Label.modulus, "n"), exponent = try bytes(Label.exponent, "e")
            // CryptoExtras refuses moduli under 2048 bits.
            guard let key = try? _RSA.Signing.PublicKey(n: modulus, e: exponent) else {
                throw COSEKeyError("n, e is not an RSA public key of at least 2048 bits")
            }
            material = .rsa(key)
        }
        self.algorithm = algorithm
    }

    /// A packed attestation certificate's key, for the statement's `alg` (§8.2: the two must
    /// match): ES256 a P-256 EC key, EdDSA an Ed25519 key, RS256 an RSA key of 2048 bits or more.
    init(algorithm: COSEAlgorithm, certificate: AttestationCertificate) throws(COSEKeyError) {
        typealias OID = AttestationCertificate.OID
        switch (algorithm, certificate.publicKeyAlgorithm) {
        case (.es256, OID.ecPublicKey) where certificate.publicKeyCurve == OID.prime256v1:
            guard let key = try? P256.Signing.PublicKey(derRepresentation: certificate.subjectPublicKeyInfo) else {
                throw COSEKeyError("the certificate's key is not a P-256 point")
            }
            material = .p256(key)
        case (.edDSA, OID.ed25519):
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: certificate.publicKey) else {
                throw COSEKeyError("the certificate's key is not an Ed25519 public key")
            }
            material = .ed25519(key)
        case (.rs256, OID.rsaEncryption):
            guard let key = try? _RSA.Signing.PublicKey(derRepresentation: certificate.subjectPublicKeyInfo) else {
                throw COSEKeyError("the certificate's key is not an RSA public key of at least 2048 bits")
            }
            material = .rsa(key)
        default:
            throw COSEKeyError("the certificate's key is not of the kind alg \(algorithm.rawValue) needs")
        }
        self.algorithm = algorithm
    }

    /// The key stored with a passkey: the COSE bytes exactly as the authenticator sent them.
    public init(encoded bytes: [UInt8]) throws(COSEKeyError) {
        let value: CBORValue
        do { value = try CBORDecoder().decode(bytes) } catch { throw COSEKeyError("not CBOR: \(error)") }
        try self.init(value)
    }

    /// A WebAuthn signature (W3C WebAuthn Level 3 §6.5.6: ES256 in ASN.1 DER, EdDSA raw, RS256
    /// PKCS#1 v1.5) over `message`.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        switch material {
        case .p256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: SHA256.hash(data: message))
        case .ed25519(let key):
            return signature.count == 64 && key.isValidSignature(signature, for: message)
        case .rsa(let key):
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: message),
                                        padding: .insecurePKCS1v1_5)
        }
    }
}

public struct COSEKeyError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
