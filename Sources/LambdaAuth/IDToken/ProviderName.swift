/// The identity providers the contract knows. Anything else is UNSUPPORTED_PROVIDER.
public enum ProviderName: String, Sendable, CaseIterable, Hashable {
    case google
    case apple
    /// An address proven by a one-time code (OneTimeCodes/), never by an ID token.
    case email

    /// The providers whose identities come as ID tokens.
    public static let idTokenProviders: [ProviderName] = [.google, .apple]

    /// Accepted `iss` values (Google documents both forms).
    public var issuers: [String] {
        switch self {
        case .google: return ["https://accounts.google.com", "accounts.google.com"]
        case .apple: return ["https://appleid.apple.com"]
        case .email: return []
        }
    }

    public static func parse(_ name: String) throws(AuthError) -> ProviderName {
        guard let provider = ProviderName(rawValue: name) else {
            throw AuthError(.unsupportedProvider, "provider must be google or apple")
        }
        return provider
    }
}
