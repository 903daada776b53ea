/// The JWS algorithms this project signs and verifies. Google and Apple sign ID tokens with RS256;
/// ES256 is for our own access tokens (and Apple's client secrets).
public enum JWSAlgorithm: String, Sendable, CaseIterable {
    case rs256 = "RS256"
    case es256 = "ES256"

    /// The JWK `kty` of the keys this algorithm uses.
    public var keyType: String {
        switch self {
        case .rs256: return "RSA"
        case .es256: return "EC"
        }
    }
}
