import Crypto

/// AUTH_PASSKEY_*: the relying party a deployment is (contract section 15).
public struct PasskeySettings: Sendable, Equatable {
    public var relyingPartyID: String
    public var relyingPartyName: String
    public var origins: [String]
    public var userVerificationRequired: Bool
    /// AUTH_PASSKEY_OPTIONS_RATE: login-options per source IP in any rolling hour.
    public var loginOptionsPerSourceIP: Int

    public init(relyingPartyID: String, relyingPartyName: String, origins: [String], userVerificationRequired: Bool,
                loginOptionsPerSourceIP: Int = 1000) {
        self.relyingPartyID = relyingPartyID
        self.relyingPartyName = relyingPartyName
        self.origins = origins
        self.userVerificationRequired = userVerificationRequired
        self.loginOptionsPerSourceIP = loginOptionsPerSourceIP
    }

    var relyingPartyIDHash: [UInt8] { Array(SHA256.hash(data: Array(relyingPartyID.utf8))) }
}

extension PasskeySettings {
    /// Contract section 15. The RP ID is a host name (WebAuthn Level 3 §5.1.6: a registrable
    /// domain suffix of the origins' hosts, never a URL); origins default to `https://` + the RP ID.
    static func fromEnvironment(_ reader: EnvironmentReader) throws(AuthError) -> PasskeySettings? {
        let variables = ["AUTH_PASSKEY_RP_NAME", "AUTH_PASSKEY_ORIGINS", "AUTH_PASSKEY_USER_VERIFICATION", "AUTH_PASSKEY_OPTIONS_RATE"]
        guard let rpID = reader.string("AUTH_PASSKEY_RP_ID") else {
            if let stray = variables.first(where: { reader.string($0) != nil }) {
                throw AuthConfiguration.configError(stray, "needs AUTH_PASSKEY_RP_ID (passkeys are off without it)")
            }
            return nil
        }
        let hostBytes = Array(rpID.utf8)
        guard hostBytes.count <= 253, hostBytes.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x2E }),
              hostBytes.first != 0x2E, hostBytes.last != 0x2E else {
            throw AuthConfiguration.configError("AUTH_PASSKEY_RP_ID", "must be a lowercase host name such as example.com")
        }
        let origins = reader.list("AUTH_PASSKEY_ORIGINS")
        // Plain http only for localhost itself: a prefix test let http://localhost.evil.example in.
        for origin in origins where !(origin.hasPrefix("android:apk-key-hash:") && origin.utf8.count > "android:apk-key-hash:".utf8.count)
            && !(WebOrigin(serialized: origin).map { $0.scheme == "https" || $0.isLocalhost } ?? false) {
            throw AuthConfiguration.configError("AUTH_PASSKEY_ORIGINS", "each origin is https://HOST[:PORT] (no path), http://localhost[:PORT] or android:apk-key-hash:…")
        }
        let verification: Bool
        switch reader.string("AUTH_PASSKEY_USER_VERIFICATION") {
        case nil, "required"?: verification = true
        case "preferred"?: verification = false
        default: throw AuthConfiguration.configError("AUTH_PASSKEY_USER_VERIFICATION", "must be required or preferred")
        }
        let name = reader.string("AUTH_PASSKEY_RP_NAME") ?? rpID
        guard name.utf8.count <= 64 else { throw AuthConfiguration.configError("AUTH_PASSKEY_RP_NAME", "must be at most 64 bytes") }
        var settings = PasskeySettings(relyingPartyID: rpID, relyingPartyName: name, origins: origins.isEmpty ? ["https://\(rpID)"] : origins,
                                       userVerificationRequired: verification)
        try reader.integer("AUTH_PASSKEY_OPTIONS_RATE", in: 1...1_000_000, into: &settings.loginOptionsPerSourceIP)
        return settings
    }
}
