/// An identity provider's name: one the contract knows (google, apple, email) or one configured
/// in AUTH_OIDC_PROVIDERS (contract section 14). Anything else is UNSUPPORTED_PROVIDER.
///
/// A struct with static members rather than a closed enum, so that a configured name is a
/// provider name too while `.google`, `.apple` and `.email` read as before.
public struct ProviderName: RawRepresentable, Sendable, CaseIterable, Hashable {
    public let rawValue: String

    public static let google = ProviderName(uncheckedRawValue: "google")
    public static let apple = ProviderName(uncheckedRawValue: "apple")
    /// An address proven by a one-time code (OneTimeCodes/), never by an ID token.
    public static let email = ProviderName(uncheckedRawValue: "email")
    /// A WebAuthn credential (Passkeys/): a user may hold several, each its own identity.
    public static let passkey = ProviderName(uncheckedRawValue: "passkey")

    /// The built-in providers, in declaration order (which orders links made in the same second).
    public static let allCases: [ProviderName] = [.google, .apple, .email, .passkey]

    /// Names a configured provider may not take: the built-ins and the proofs that are not ID
    /// tokens (guests, passkeys).
    public static let reservedNames: Set<String> = ["google", "apple", "email", "guest", "passkey"]

    /// The built-in providers whose identities come as ID tokens.
    public static let idTokenProviders: [ProviderName] = [.google, .apple]

    private init(uncheckedRawValue: String) { rawValue = uncheckedRawValue }

    /// A built-in name, or a name a configured provider could have (stored identities of a
    /// configured provider read back through this).
    public init?(rawValue: String) {
        guard ProviderName.reservedNames.contains(rawValue) ? ProviderName.allCases.contains(where: { $0.rawValue == rawValue })
                                                             : ProviderName.isConfigurableName(rawValue)
        else { return nil }
        self.rawValue = rawValue
    }

    /// A configured OpenID Connect provider's name: `[a-z][a-z0-9-]{1,31}` and not reserved.
    public init?(configured name: String) {
        guard ProviderName.isConfigurableName(name) else { return nil }
        rawValue = name
    }

    static func isConfigurableName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (2...32).contains(bytes.count), (0x61...0x7A).contains(bytes[0]) else { return false }
        let valid = bytes.dropFirst().allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
        return valid && !reservedNames.contains(name)
    }

    /// Whether the contract defines this provider (rather than AUTH_OIDC_PROVIDERS).
    public var isBuiltIn: Bool { ProviderName.allCases.contains(self) }

    /// Position among the built-ins; configured providers come after them.
    public var declarationIndex: Int { ProviderName.allCases.firstIndex(of: self) ?? ProviderName.allCases.count }

    /// A built-in provider by name (authctl's dev identity provider); requests go through the
    /// registry, which knows the configured ones too.
    public static func parse(_ name: String) throws(AuthError) -> ProviderName {
        guard let provider = allCases.first(where: { $0.rawValue == name }) else {
            throw AuthError(.unsupportedProvider, "provider must be google or apple")
        }
        return provider
    }
}
