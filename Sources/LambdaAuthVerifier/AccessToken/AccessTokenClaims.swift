/// The claims of one of our access tokens after verification (docs/keys-and-secrets.md, "Keys
/// for the app's own APIs"): who (`sub`), which session (`sid`), whether the user is a guest, and
/// the operators' app metadata.
public struct AccessTokenClaims: Sendable, Equatable {
    /// `sub`: the user's id.
    public let userID: String
    /// `sid`: the session the token was issued to.
    public let sessionID: String
    public let issuedAt: Int64
    public let expiresAt: Int64
    /// `jti`.
    public let tokenID: String
    /// `iss`.
    public let issuer: String
    /// `aud`, always as a list (the token may carry a string or an array).
    public let audiences: [String]
    /// `is_anonymous: true`: a guest's token (contract section 9).
    public let isAnonymous: Bool
    /// The whole verified payload, for claims not named above.
    public let claims: [String: JSONValue]

    /// `aal`: `aal2` when the session was proven with a second factor (or a passkey with user
    /// verification), `aal1` otherwise (contract section 21); nil on tokens issued before.
    public var aal: String? { claims["aal"]?.stringValue }

    /// `amr` (RFC 8176): how the session was proven, such as `["google", "otp"]`; empty when the
    /// token does not say.
    public var amr: [String] { claims["amr"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// `sub` under its JWT name.
    public var subject: String { userID }

    /// `app_metadata`: what the operators gave this user (a role, a plan; contract section 17), as
    /// of the token's issue; empty when the user has none.
    public var appMetadata: [String: JSONValue] { claims["app_metadata"]?.objectValue ?? [:] }

    /// One member of `appMetadata` as a string (`claims.appMetadataString("role") == "admin"`).
    public func appMetadataString(_ name: String) -> String? { appMetadata[name]?.stringValue }

    package init(userID: String, sessionID: String, issuedAt: Int64, expiresAt: Int64, tokenID: String, issuer: String,
                 audiences: [String], isAnonymous: Bool, claims: [String: JSONValue]) {
        self.userID = userID
        self.sessionID = sessionID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.tokenID = tokenID
        self.issuer = issuer
        self.audiences = audiences
        self.isAnonymous = isAnonymous
        self.claims = claims
    }
}
