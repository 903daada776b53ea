import Crypto
import CryptoExtras

/// Signs JWTs in compact serialization, every one we produce: our access tokens (RS256 or ES256,
/// by the signing key's type), Apple's client secrets (ES256), and the dev identity provider's, the
/// demo's, the benchmark's and the tests' ID tokens (RS256; any algorithm for configured providers).
public enum JWSSigner {
    /// A token signed with `key`, in the algorithm its type decides.
    public static func sign(header: [String: JSONValue] = [:], payload: [String: JSONValue],
                            keyID: String?, key: JWSSigningKey) throws -> String {
        try sign(header: header, payload: payload, keyID: keyID, key: key, algorithm: key.algorithm)
    }

    /// Why a key cannot sign the algorithm asked of it.
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// A token signed with `key` in `algorithm`, which the key's type must allow (an RSA key
    /// signs RS256/384/512 and PS256/384/512).
    public static func sign(header: [String: JSONValue] = [:], payload: [String: JSONValue],
                            keyID: String?, key: JWSSigningKey, algorithm: JWSAlgorithm) throws -> String {
        guard key.canSign(algorithm) else {
            throw Mismatch(description: "a \(key.algorithm.keyType) key cannot sign \(algorithm.rawValue)")
        }
        var header = header
        header["alg"] = .string(algorithm.rawValue)
        if let keyID { header["kid"] = .string(keyID) }
        let input = CompactJWS.signingInput(header: header, payload: JSONValue.object(payload).serializedBytes())
        return CompactJWS.serialize(signingInput: input, signature: try key.signature(over: Array(input.utf8), algorithm: algorithm))
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
}
