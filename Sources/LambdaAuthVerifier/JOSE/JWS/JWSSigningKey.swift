import Crypto
import CryptoExtras

/// A private key that signs JWS, whose type decides its algorithm: RSA signs RS256, P-256 ES256
/// (contract section 13). Read from PEM in PKCS#8 or the traditional forms (`RSA PRIVATE KEY`,
/// `EC PRIVATE KEY`).
public enum JWSSigningKey: Sendable {
    case rsa(_RSA.Signing.PrivateKey)
    case p256(P256.Signing.PrivateKey)

    /// RSA moduli we sign with: CryptoExtras refuses anything under 2048 bits; past 4096 every
    /// signature costs several milliseconds for no security a verifier asks for.
    public static let rsaBits: ClosedRange<Int> = 2048...4096

    /// Why a PEM block is not a signing key; the key itself never appears in it.
    public struct Unusable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public var algorithm: JWSAlgorithm {
        switch self {
        case .rsa: return .rs256
        case .p256: return .es256
        }
    }

    public var publicMaterial: JSONWebKey.Material {
        switch self {
        case .rsa(let key): return .rsa(key.publicKey)
        case .p256(let key): return .p256(key.publicKey)
        }
    }

    public var pemRepresentation: String {
        switch self {
        case .rsa(let key): return key.pemRepresentation
        case .p256(let key): return key.pemRepresentation
        }
    }

    /// A new random key for `algorithm` (RSA: 2048 bits).
    public static func generate(_ algorithm: JWSAlgorithm) throws -> JWSSigningKey {
        switch algorithm {
        case .rs256: return .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        case .es256: return .p256(P256.Signing.PrivateKey())
        }
    }

    /// One PEM block. The label says RSA or EC where it can; a PKCS#8 `PRIVATE KEY` may be either.
    public init(pem block: String) throws(Unusable) {
        let label = block.split(separator: "\n", maxSplits: 1).first.map { $0.trimmingTrailingWhitespace } ?? ""
        switch label {
        case "-----BEGIN RSA PRIVATE KEY-----":
            self = try JWSSigningKey.rsa(pem: block)
        case "-----BEGIN EC PRIVATE KEY-----":
            guard let key = try? P256.Signing.PrivateKey(pemRepresentation: block) else {
                throw Unusable(description: "is an EC key but not on P-256")
            }
            self = .p256(key)
        case "-----BEGIN PRIVATE KEY-----":
            if let key = try? P256.Signing.PrivateKey(pemRepresentation: block) {
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

    /// The JWS signature over `signingInput`'s SHA-256 digest, in the form RFC 7518 gives for the
    /// algorithm (RSASSA-PKCS1-v1_5 bytes; ECDSA r || s, not DER).
    func signature(for digest: SHA256Digest) throws -> [UInt8] {
        switch self {
        case .rsa(let key): return Array(try key.signature(for: digest, padding: .insecurePKCS1v1_5).rawRepresentation)
        case .p256(let key): return Array(try key.signature(for: digest).rawRepresentation)
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
