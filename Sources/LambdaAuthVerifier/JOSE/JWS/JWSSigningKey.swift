import Crypto
import CryptoExtras

/// A private key that signs JWS, whose type decides its default algorithm: RSA signs RS256, P-256
/// ES256 (contract section 13). Read from PEM in PKCS#8 or the traditional forms (`RSA PRIVATE
/// KEY`, `EC PRIVATE KEY`), RSA and P-256 only. P-384 and Ed25519 keys, and RSA keys signing
/// RS384/512 or PS*, exist for the dev identity provider's tokens of configured providers.
public enum JWSSigningKey: Sendable {
    case rsa(_RSA.Signing.PrivateKey)
    case p256(P256.Signing.PrivateKey)
    case p384(P384.Signing.PrivateKey)
    case ed25519(Curve25519.Signing.PrivateKey)

    /// RSA moduli we sign with: CryptoExtras refuses anything under 2048 bits; past 4096 every
    /// signature costs several milliseconds for no security a verifier asks for.
    public static let rsaBits: ClosedRange<Int> = 2048...4096

    /// Why a PEM block is not a signing key; the key itself never appears in it.
    public struct Unusable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public var algorithm: JWSAlgorithm { publicMaterial.defaultAlgorithm }

    public var publicMaterial: JSONWebKey.Material {
        switch self {
        case .rsa(let key): return .rsa(key.publicKey)
        case .p256(let key): return .p256(key.publicKey)
        case .p384(let key): return .p384(key.publicKey)
        case .ed25519(let key): return .ed25519(key.publicKey)
        }
    }

    public var pemRepresentation: String {
        switch self {
        case .rsa(let key): return key.pemRepresentation
        case .p256(let key): return key.pemRepresentation
        case .p384(let key): return key.pemRepresentation
        case .ed25519(let key):
            // PKCS#8 (RFC 8410): the fixed 16-byte prefix of an Ed25519 OneAsymmetricKey, then the seed.
            let prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]
            return "-----BEGIN PRIVATE KEY-----\n" + Base64.encoded(prefix + Array(key.rawRepresentation)) + "\n-----END PRIVATE KEY-----\n"
        }
    }

    /// A new random key for `algorithm` (RSA: 2048 bits).
    public static func generate(_ algorithm: JWSAlgorithm) throws -> JWSSigningKey {
        switch algorithm {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: return .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        case .es256: return .p256(P256.Signing.PrivateKey())
        case .es384: return .p384(P384.Signing.PrivateKey())
        case .edDSA: return .ed25519(Curve25519.Signing.PrivateKey())
        }
    }

    /// Whether this key can sign `algorithm` (an RSA key signs every RS* and PS*).
    public func canSign(_ algorithm: JWSAlgorithm) -> Bool {
        publicMaterial.defaultAlgorithm.keyType == algorithm.keyType && publicMaterial.defaultAlgorithm.curve == algorithm.curve
    }

    /// One PEM block. The label says RSA or EC where it can; a PKCS#8 `PRIVATE KEY` may be either.
    public init(pem block: String) throws(Unusable) {
        let label = block.split(separator: "\n", maxSplits: 1).first.map { $0.trimmingTrailingWhitespace } ?? ""
        switch label {
        case "-----BEGIN RSA PRIVATE KEY-----":
            self = try JWSSigningKey.rsa(pem: block)
        case "-----BEGIN EC PRIVATE KEY-----":
            guard let key = PEM.p256PrivateKey(block) else {
                throw Unusable(description: "is an EC key but not on P-256")
            }
            self = .p256(key)
        case "-----BEGIN PRIVATE KEY-----":
            if let key = PEM.p256PrivateKey(block) {
                self = .p256(key)
            } else {
                self = try JWSSigningKey.rsa(pem: block, otherwise: "is neither an RSA nor a P-256 private key")
            }
        default:
            throw Unusable(description: "is not an unencrypted PEM private key (RSA PRIVATE KEY, EC PRIVATE KEY or PRIVATE KEY)")
        }
    }

    private static func rsa(pem block: String, otherwise: String = "is not an RSA private key") throws(Unusable) -> JWSSigningKey {
        // The unchecked reader, so that a short key is told apart from a broken one.
        guard let key = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: block) else {
            throw Unusable(description: otherwise)
        }
        guard rsaBits.contains(key.keySizeInBits) else {
            throw Unusable(description: "is a \(key.keySizeInBits)-bit RSA key; RS256 keys must have 2048 to 4096 bits")
        }
        return .rsa(key)
    }

    /// The JWS signature over `signingInput`, in the form RFC 7518 gives for `algorithm`
    /// (RSASSA-PKCS1-v1_5 or PSS bytes; ECDSA r || s, not DER; Ed25519's 64 bytes). The caller
    /// has checked `canSign(algorithm)`.
    func signature(over signingInput: [UInt8], algorithm: JWSAlgorithm) throws -> [UInt8] {
        switch self {
        case .rsa(let key):
            let padding: _RSA.Signing.Padding = algorithm.isPSS ? .PSS : .insecurePKCS1v1_5
            switch algorithm.hashBits {
            case 384: return Array(try key.signature(for: SHA384.hash(data: signingInput), padding: padding).rawRepresentation)
            case 512: return Array(try key.signature(for: SHA512.hash(data: signingInput), padding: padding).rawRepresentation)
            default: return Array(try key.signature(for: SHA256.hash(data: signingInput), padding: padding).rawRepresentation)
            }
        case .p256(let key): return Array(try key.signature(for: SHA256.hash(data: signingInput)).rawRepresentation)
        case .p384(let key): return Array(try key.signature(for: SHA384.hash(data: signingInput)).rawRepresentation)
        case .ed25519(let key): return Array(try key.signature(for: signingInput))
        }
    }
}

private extension Substring {
    var trimmingTrailingWhitespace: Substring {
        var text = self
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return text
    }
}
