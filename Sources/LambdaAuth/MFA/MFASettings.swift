/// `AUTH_MFA` and `AUTH_MFA_ISSUER` (contract section 21): whether users may add a second
/// factor, and the name their authenticator app shows beside its codes.
public struct MFASettings: Sendable, Equatable {
    public enum Mode: String, Sendable { case off, optional }
    public var mode: Mode = .off
    /// AUTH_MFA_ISSUER, or the AUTH_ISSUER host (the whole AUTH_ISSUER when it is not a URL).
    public var issuer: String

    public var isEnabled: Bool { mode == .optional }

    public init(mode: Mode = .off, issuer: String) {
        self.mode = mode
        self.issuer = issuer
    }

    static func fromEnvironment(_ reader: EnvironmentReader, authIssuer: String) throws(AuthError) -> MFASettings {
        var settings = MFASettings(issuer: defaultIssuer(authIssuer))
        try reader.choice("AUTH_MFA", "must be off or optional", into: &settings.mode)
        if let issuer = reader.string("AUTH_MFA_ISSUER") {
            // The Key Uri Format's label is `issuer:account`: a colon would split it elsewhere.
            guard (1...64).contains(issuer.utf8.count), !issuer.contains(text: ":"), !issuer.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
                throw AuthConfiguration.configError("AUTH_MFA_ISSUER", "must be 1 to 64 characters without a colon or control characters")
            }
            settings.issuer = issuer
        }
        return settings
    }

    /// `https://auth.example.com/v1` → `auth.example.com`.
    static func defaultIssuer(_ authIssuer: String) -> String {
        guard let schemeEnd = authIssuer.firstRange(ofText: "://") else { return authIssuer.replacing(text: ":", with: "") }
        let rest = authIssuer[schemeEnd.upperBound...]
        let host = rest.prefix { $0 != "/" && $0 != ":" && $0 != "?" && $0 != "#" }
        return host.isEmpty ? authIssuer.replacing(text: ":", with: "") : String(host)
    }
}
