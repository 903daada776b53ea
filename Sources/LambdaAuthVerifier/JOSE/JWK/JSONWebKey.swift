import Crypto
import CryptoExtras

/// A public key from a JWK (RFC 7517, RFC 8037 for OKP), usable for the signature algorithms it
/// was read for.
///
/// A JWK whose `kty`, `crv`, `use`, `alg` or `key_ops` does not fit signature verification with
/// one of those algorithms is refused rather than adapted: a key published for encryption, or
/// for another algorithm, must never verify an ID token. A JWK that declares `alg` verifies that
/// algorithm only; one without `alg` (Microsoft publishes its keys so) verifies every requested
/// algorithm its `kty` and `crv` allow.
public struct JSONWebKey: Sendable {
    public enum Material: Sendable {
        case rsa(_RSA.Signing.PublicKey)
        case p256(P256.Signing.PublicKey)
        case p384(P384.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)

        /// The algorithm a key of this type verifies when nothing says otherwise (our own keys:
        /// RSA signs RS256).
        var defaultAlgorithm: JWSAlgorithm {
            switch self {
            case .rsa: return .rs256
            case .p256: return .es256
            case .p384: return .es384
            case .ed25519: return .edDSA
            }
        }
    }

    /// Why a JWK cannot be used; for logs and tests, never shown to a caller.
    public struct Unusable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let keyID: String?
    /// Never empty; the first is the one a published JWK of the key declares.
    public let algorithms: [JWSAlgorithm]
    public let material: Material

    public var algorithm: JWSAlgorithm { algorithms[0] }

    public init(keyID: String?, material: Material) {
        self.init(keyID: keyID, material: material, algorithms: [material.defaultAlgorithm])
    }

    init(keyID: String?, material: Material, algorithms: [JWSAlgorithm]) {
        self.keyID = keyID
        self.material = material
        self.algorithms = algorithms
    }

    /// Reads `jwk` as a verification key for `algorithm`.
    public init(_ jwk: JSONValue, for algorithm: JWSAlgorithm) throws(Unusable) {
        try self.init(jwk, forAnyOf: [algorithm])
    }

    /// Reads `jwk` as a verification key for those of `accepted` it may serve: its declared
    /// `alg` when that is accepted, else every accepted algorithm of its `kty` and `crv`.
    public init(_ jwk: JSONValue, forAnyOf accepted: [JWSAlgorithm]) throws(Unusable) {
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
        /// x || y, each exactly as long as the curve's coordinates.
        func point(coordinateBytes: Int) throws(Unusable) -> [UInt8] {
            let x = try bytes("x"), y = try bytes("y")
            guard x.count == coordinateBytes, y.count == coordinateBytes else { throw Unusable(description: "x or y has the wrong length") }
            return x + y
        }
        func names(_ list: [JWSAlgorithm]) -> String { list.map(\.rawValue).joined(separator: "/") }

        let keyType = try text("kty"), curve = try text("crv")
        var algorithms = accepted.filter { $0.keyType == keyType && ($0.curve == nil || $0.curve == curve) }
        guard !algorithms.isEmpty else {
            throw Unusable(description: "kty \(keyType ?? "(none)")\(curve.map { " crv \($0)" } ?? "") fits none of \(names(accepted))")
        }
        if let use = try text("use"), use != "sig" { throw Unusable(description: "use is not sig") }
        if let declared = try text("alg") {
            guard let algorithm = algorithms.first(where: { $0.rawValue == declared }) else {
                throw Unusable(description: "alg is not \(names(algorithms))")
            }
            algorithms = [algorithm]
        }
        if let operations = members["key_ops"] {
            guard let list = operations.arrayValue, list.contains(.string("verify")) else {
                throw Unusable(description: "key_ops does not allow verify")
            }
        }

        let material: Material
        switch algorithms[0].curve {
        case nil:
            let modulus = try bytes("n"), exponent = try bytes("e")
            // CryptoExtras refuses moduli under 2048 bits.
            guard let key = try? _RSA.Signing.PublicKey(n: modulus, e: exponent) else {
                throw Unusable(description: "not an RSA public key of at least 2048 bits")
            }
            material = .rsa(key)
        case "P-256"?:
            guard let key = try? P256.Signing.PublicKey(rawRepresentation: point(coordinateBytes: 32)) else {
                throw Unusable(description: "not a P-256 public key")
            }
            material = .p256(key)
        case "P-384"?:
            guard let key = try? P384.Signing.PublicKey(rawRepresentation: point(coordinateBytes: 48)) else {
                throw Unusable(description: "not a P-384 public key")
            }
            material = .p384(key)
        default:
            let x = try bytes("x")
            guard x.count == 32, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x) else {
                throw Unusable(description: "not an Ed25519 public key")
            }
            material = .ed25519(key)
        }
        self.init(keyID: try text("kid"), material: material, algorithms: algorithms)
    }

    /// The raw JWS signature check over `signingInput` with the key's first algorithm.
    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8]) -> Bool {
        isValidSignature(signature, for: signingInput, algorithm: algorithm)
    }

    /// The raw JWS signature check over `signingInput`, in the form RFC 7518 gives for `algorithm`;
    /// false for an algorithm this key was not read for.
    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8], algorithm: JWSAlgorithm) -> Bool {
        guard algorithms.contains(algorithm) else { return false }
        switch material {
        case .rsa(let key):
            let parsed = _RSA.Signing.RSASignature(rawRepresentation: signature)
            // PS*: MGF1 with the same hash and a salt as long as the hash (RFC 7518 §3.5), which
            // is what CryptoExtras' .PSS padding means.
            let padding: _RSA.Signing.Padding = algorithm.isPSS ? .PSS : .insecurePKCS1v1_5
            switch algorithm.hashBits {
            case 384: return key.isValidSignature(parsed, for: SHA384.hash(data: signingInput), padding: padding)
            case 512: return key.isValidSignature(parsed, for: SHA512.hash(data: signingInput), padding: padding)
            default: return key.isValidSignature(parsed, for: SHA256.hash(data: signingInput), padding: padding)
            }
        case .p256(let key):
            // JWS carries r || s (RFC 7518 §3.4), not DER.
            guard signature.count == 64,
                  let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: SHA256.hash(data: signingInput))
        case .p384(let key):
            guard signature.count == 96,
                  let parsed = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: SHA384.hash(data: signingInput))
        case .ed25519(let key):
            // EdDSA signs the message itself, not a digest of it (RFC 8037 §3.1).
            return signature.count == 64 && key.isValidSignature(signature, for: signingInput)
        }
    }
}

extension JWSAlgorithm {
    /// RSASSA-PSS rather than RSASSA-PKCS1-v1_5.
    var isPSS: Bool { self == .ps256 || self == .ps384 || self == .ps512 }

    /// The SHA-2 size the algorithm hashes with (EdDSA's internal SHA-512 is Ed25519's business).
    var hashBits: Int {
        switch self {
        case .rs384, .ps384, .es384: return 384
        case .rs512, .ps512, .edDSA: return 512
        case .rs256, .ps256, .es256: return 256
        }
    }
}
