import Crypto
import CryptoExtras

extension JSONWebKey.Material {
    /// The members RFC 7638 §3.2 requires for the key type, and only those: what the thumbprint
    /// hashes and what every published JWK of the key starts from.
    var requiredMembers: [String: JSONValue] {
        switch self {
        case .rsa(let key):
            // getKeyPrimitives fails only for a key BoringSSL itself could not hold.
            let primitives = try? key.getKeyPrimitives()
            return ["kty": "RSA",
                    "n": .string(Base64.urlEncoded(primitives.map { Array($0.modulus) } ?? [])),
                    "e": .string(Base64.urlEncoded(primitives.map { Array($0.publicExponent) } ?? []))]
        case .p256(let key):
            let raw = Array(key.rawRepresentation)  // x || y, 32 bytes each
            return ["kty": "EC", "crv": "P-256",
                    "x": .string(Base64.urlEncoded(raw[0..<32])), "y": .string(Base64.urlEncoded(raw[32..<64]))]
        case .p384(let key):
            let raw = Array(key.rawRepresentation)  // x || y, 48 bytes each
            return ["kty": "EC", "crv": "P-384",
                    "x": .string(Base64.urlEncoded(raw[0..<48])), "y": .string(Base64.urlEncoded(raw[48..<96]))]
        case .ed25519(let key):
            // RFC 8037 §2: an OKP key's required members are crv, kty and x.
            return ["kty": "OKP", "crv": "Ed25519", "x": .string(Base64.urlEncoded(Array(key.rawRepresentation)))]
        }
    }

    /// The RFC 7638 thumbprint (SHA-256): the one `kid` we derive for a key of ours, stable
    /// wherever the key is loaded and different for the next key.
    public var thumbprint: String {
        // RFC 7638 hashes the required members in lexicographic order without whitespace, which
        // is exactly how JSONValue serialises an object.
        Base64.urlEncoded(SHA256.hash(data: JSONValue.object(requiredMembers).serializedBytes()).bytes)
    }
}

extension JSONWebKey {
    /// The public JWK as a provider publishes it: the required members, `kid` when the key has
    /// one, `use: sig` and the key's one algorithm, so that `JSONWebKey(_:for:)` reads it back.
    public var publicJWK: JSONValue {
        var members = material.requiredMembers
        if let keyID { members["kid"] = .string(keyID) }
        members["use"] = "sig"
        members["alg"] = .string(algorithm.rawValue)
        return .object(members)
    }
}
