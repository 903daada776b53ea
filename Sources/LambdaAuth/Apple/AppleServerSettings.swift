import Crypto
import LambdaAuthVerifier

/// Sign in with Apple's back channel (contract section 8): the team's `.p8` key that signs the
/// `client_secret`, Apple's token and revocation endpoints, and the key that seals Apple's
/// refresh tokens at rest. Present only when the team id, key id and private key are all set.
public struct AppleServerSettings: Sendable {
    public var teamID: String
    public var keyID: String
    public var privateKey: P256.Signing.PrivateKey
    public var tokenURL: String
    public var revokeURL: String
    /// The keys of the stored Apple refresh tokens (AUTH_DATA_KEYS or AUTH_DATA_KEY).
    public var dataKeys: DataKeys

    public static let defaultTokenURL = "https://appleid.apple.com/auth/token"
    public static let defaultRevokeURL = "https://appleid.apple.com/auth/revoke"

    /// nil when none of the three is set (the back channel is off). Some but not all of them is a
    /// CONFIG_ERROR naming what is missing; no message ever quotes a value.
    static func fromEnvironment(_ reader: EnvironmentReader, dataKeys: DataKeys?) throws(AuthError) -> AppleServerSettings? {
        let teamID = reader.string("AUTH_APPLE_TEAM_ID")
        let keyID = reader.string("AUTH_APPLE_KEY_ID")
        var pem = reader.string("AUTH_APPLE_PRIVATE_KEY")
        var keyVariable = "AUTH_APPLE_PRIVATE_KEY"
        if pem == nil, let path = reader.string("AUTH_APPLE_PRIVATE_KEY_FILE") {
            keyVariable = "AUTH_APPLE_PRIVATE_KEY_FILE"
            do {
                pem = String(decoding: try FileSystem.readFile(path, limit: 64 << 10), as: UTF8.self)
            } catch {
                throw AuthConfiguration.configError("AUTH_APPLE_PRIVATE_KEY_FILE", "cannot be read")
            }
        }
        // Checked even with the back channel off: an invalid value is never silently ignored.
        let tokenURL = try reader.secureURL("AUTH_APPLE_TOKEN_URL")
        let revokeURL = try reader.secureURL("AUTH_APPLE_REVOKE_URL")
        guard teamID != nil || keyID != nil || pem != nil else { return nil }
        guard let teamID else { throw AuthConfiguration.configError("AUTH_APPLE_TEAM_ID", "is required with AUTH_APPLE_KEY_ID and AUTH_APPLE_PRIVATE_KEY") }
        guard let keyID else { throw AuthConfiguration.configError("AUTH_APPLE_KEY_ID", "is required with AUTH_APPLE_TEAM_ID and AUTH_APPLE_PRIVATE_KEY") }
        guard let pem else {
            throw AuthConfiguration.configError("AUTH_APPLE_PRIVATE_KEY", "(or AUTH_APPLE_PRIVATE_KEY_FILE) is required with AUTH_APPLE_TEAM_ID and AUTH_APPLE_KEY_ID")
        }
        guard let privateKey = PEM.p256PrivateKey(pem) else {
            throw AuthConfiguration.configError(keyVariable, "is not a PEM EC P-256 private key (Apple's .p8)")
        }
        guard let dataKeys else {
            throw AuthConfiguration.configError("AUTH_DATA_KEYS", "(or AUTH_DATA_KEY) is required with AUTH_APPLE_TEAM_ID: Apple's refresh tokens are stored encrypted under it")
        }
        return AppleServerSettings(teamID: teamID, keyID: keyID, privateKey: privateKey,
                                   tokenURL: tokenURL ?? defaultTokenURL, revokeURL: revokeURL ?? defaultRevokeURL,
                                   dataKeys: dataKeys)
    }
}
