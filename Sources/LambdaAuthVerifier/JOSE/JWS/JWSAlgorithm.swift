/// The JWS algorithms this project signs and verifies (RFC 7518 §3, RFC 8037 §3.1). Google and
/// Apple sign ID tokens with RS256; our access tokens are RS256 or ES256 (`AccessTokenCheck`); a
/// configured OpenID Connect provider may use any of them (contract section 14).
public enum JWSAlgorithm: String, Sendable, CaseIterable {
    case rs256 = "RS256"
    case rs384 = "RS384"
    case rs512 = "RS512"
    case ps256 = "PS256"
    case ps384 = "PS384"
    case ps512 = "PS512"
    case es256 = "ES256"
    case es384 = "ES384"
    case edDSA = "EdDSA"

    /// The JWK `kty` of the keys this algorithm uses.
    public var keyType: String {
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: return "RSA"
        case .es256, .es384: return "EC"
        case .edDSA: return "OKP"
        }
    }

    /// The JWK `crv` this algorithm needs; nil for RSA. EdDSA names no curve of its own (RFC 8037),
    /// and Ed25519 is the only one we take.
    public var curve: String? {
        switch self {
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512: return nil
        case .es256: return "P-256"
        case .es384: return "P-384"
        case .edDSA: return "Ed25519"
        }
    }
}
