import Crypto
import CryptoExtras

/// A public key from a JWK (RFC 7517), usable for exactly one signature algorithm.
///
/// A JWK whose `kty`, `use`, `alg` or `key_ops` does not fit signature verification with that
/// algorithm is refused rather than adapted: a key published for encryption, or for another
/// algorithm, must never verify an ID token.
public struct JSONWebKey: Sendable {
    public enum Material: Sendable {
        case rsa(_RSA.Signing.PublicKey)
        case p256(P256.Signing.PublicKey)
    }

    /// Why a JWK cannot be used; for logs and tests, never shown to a caller.
    public struct Unusable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let keyID: String?
    public let algorithm: JWSAlgorithm
    public let material: Material

    public init(keyID: String?, material: Material) {
        self.keyID = keyID
        self.material = material
        switch material {
        case .rsa: algorithm = .rs256
        case .p256: algorithm = .es256
        }
    }

    /// Reads `jwk` as a verification key for `algorithm`.
    public init(_ jwk: JSONValue, for algorithm: JWSAlgorithm) throws(Unusable) {
        guard case .object(let members) = jwk else { throw Unusable(description: "a JWK must be an object") }
        func text(_ name: String) throws(Unusable) -> String? {
            guard let value = members[name] else { return nil }
            guard let text = value.stringValue else { throw Unusable(description: "\(name) must be a string") }
            return text
        }
        func bytes(_ name: String) throws(Unusable) -> [UInt8] {
            guard let value = try text(name), let decoded = Base64.urlDecoded(value), !decoded.isEmpty else {
                throw Unusable(description: "\(name) must be non-empty canonical base64url")
            }
            return decoded
        }

        guard try text("kty") == algorithm.keyType else { throw Unusable(description: "kty is not \(algorithm.keyType)") }
        if let use = try text("use"), use != "sig" { throw Unusable(description: "use is not sig") }
        if let declared = try text("alg"), declared != algorithm.rawValue {
            throw Unusable(description: "alg is not \(algorithm.rawValue)")
        }
        if let operations = members["key_ops"] {
            guard let list = operations.arrayValue, list.contains(.string("verify")) else {
                throw Unusable(description: "key_ops does not allow verify")
            }
        }

        let material: Material
        switch algorithm {
        case .rs256:
            let modulus = try bytes("n"), exponent = try bytes("e")
            // CryptoExtras refuses moduli under 2048 bits.
            guard let key = try? _RSA.Signing.PublicKey(n: modulus, e: exponent) else {
                throw Unusable(description: "not an RSA public key of at least 2048 bits")
            }
            material = .rsa(key)
        case .es256:
            guard try text("crv") == "P-256" else { throw Unusable(description: "crv is not P-256") }
            let x = try bytes("x"), y = try bytes("y")
            guard x.count == 32, y.count == 32,
                  let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { throw Unusable(description: "not a P-256 public key") }
            material = .p256(key)
        }
        self.init(keyID: try text("kid"), material: material)
    }

    /// The raw JWS signature check over `signingInput`; the header's `alg` is the caller's concern.
    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8]) -> Bool {
        let digest = SHA256.hash(data: signingInput)
        switch material {
        case .rsa(let key):
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: digest,
                                        padding: .insecurePKCS1v1_5)
        case .p256(let key):
            // JWS carries r || s (RFC 7518 §3.4), not DER.
            guard signature.count == 64,
                  let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: digest)
        }
    }
}
