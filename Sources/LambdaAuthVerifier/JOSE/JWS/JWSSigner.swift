import Crypto
import CryptoExtras

/// Signs JWTs in compact serialization, every one we produce: our access tokens (RS256 or ES256,
/// by the signing key's type), Apple's client secrets (ES256), and the dev identity provider's, the
/// demo's, the benchmark's and the tests' ID tokens (RS256).
public enum JWSSigner {
    /// A token signed with `key`, in the algorithm its type decides.
    public static func sign(header: [String: JSONValue] = [:], payload: [String: JSONValue],
                            keyID: String?, key: JWSSigningKey) throws -> String {
        try sign(header: header, payload: payload, keyID: keyID, algorithm: key.algorithm) { digest in
            try key.signature(for: digest)
        }
    }

    /// An RS256 token (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3). `header` gets `alg`
    /// and, when given, `kid`; anything else in it is kept as is.
    public static func signRS256(header: [String: JSONValue] = [:], payload: [String: JSONValue],
                                 keyID: String?, key: _RSA.Signing.PrivateKey) throws -> String {
        try sign(header: header, payload: payload, keyID: keyID, key: .rsa(key))
    }

    /// An ES256 token (ECDSA P-256 with SHA-256, RFC 7518 §3.4): the signature is r || s, not DER.
    public static func signES256(header: [String: JSONValue] = [:], payload: [String: JSONValue],
                                 keyID: String?, key: P256.Signing.PrivateKey) throws -> String {
        try sign(header: header, payload: payload, keyID: keyID, key: .p256(key))
    }

    /// The claims are serialised deterministically (sorted keys), so equal claims sign equal bytes.
    static func sign(header: [String: JSONValue], payload: [String: JSONValue], keyID: String?, algorithm: JWSAlgorithm,
                     signature: (SHA256Digest) throws -> [UInt8]) throws -> String {
        var header = header
        header["alg"] = .string(algorithm.rawValue)
        if let keyID { header["kid"] = .string(keyID) }
        let input = CompactJWS.signingInput(header: header, payload: JSONValue.object(payload).serializedBytes())
        return CompactJWS.serialize(signingInput: input, signature: try signature(SHA256.hash(data: Array(input.utf8))))
    }
}
