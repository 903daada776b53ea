import Foundation

/// Any JSON value, for what the server leaves open: a user's `appMetadata`, a passkey ceremony's
/// options and credential.
public enum JSON: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public var objectValue: [String: JSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}

/// The signed-in user, as every answer of the server shows it.
public struct User: Sendable, Equatable, Codable {
    public var id: String
    public var email: String?
    public var emailVerified: Bool?
    public var displayName: String?
    public var pictureUrl: String?
    public var identities: [Identity]
    public var createdAt: String?
    public var lastSignInAt: String?
    /// A guest (no identity yet); nil for full users.
    public var isGuest: Bool?
    /// What the app's operators gave this user (a role, a plan); nil when none.
    public var appMetadata: [String: JSON]?

    public struct Identity: Sendable, Equatable, Codable {
        public var provider: String
        public var subject: String
        public var email: String?
        public var linkedAt: String?
    }
}

/// One of the user's signed-in devices (`sessions()`).
public struct SessionInfo: Sendable, Equatable, Codable {
    public var id: String
    public var device: [String: String]?
    public var createdAt: String
    public var lastActiveAt: String
    public var current: Bool
}

/// One of the user's passkeys (`passkeys()`, `registerPasskey`): its id is the identity's
/// `subject` in `user.identities` (provider `passkey`).
public struct Passkey: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var createdAt: String
    /// Nil until it is first used to sign in.
    public var lastUsedAt: String?
}

/// Temporary AWS credentials, refreshed with the tokens.
public struct AWSCredentials: Sendable, Equatable, Codable {
    public var accessKeyId: String
    public var secretAccessKey: String
    public var sessionToken: String
    /// ISO-8601, as the server writes it.
    public var expiration: String

    /// `expiration` as a date (nil if the server wrote something else).
    public var expiresAt: Date? { ISO8601DateFormatter().date(from: expiration) }
}

/// The device a session is opened on (optional on every sign-in).
public struct Device: Sendable, Equatable, Codable {
    public var id: String?
    public var name: String?
    public var platform: String?

    public init(id: String? = nil, name: String? = nil, platform: String? = nil) {
        self.id = id
        self.name = name
        self.platform = platform
    }
}

/// A sign-in that waits for the user's second factor (`MFA_REQUIRED`): pass `mfaToken` to
/// `AuthClient.completeSignIn` with the code the authenticator app shows, or a recovery code,
/// within 300 s, from the same client (it sends the sign-in's device again).
public struct MFAChallenge: Sendable, Equatable {
    public var mfaToken: String
    /// `totp` and `recovery`.
    public var factors: [String]

    public init(mfaToken: String, factors: [String]) {
        self.mfaToken = mfaToken
        self.factors = factors
    }
}

/// A TOTP factor being added: show `uri` as a QR code (or `secret` to type in), then confirm
/// with the first code the authenticator app shows.
public struct TOTPEnrollment: Sendable, Equatable {
    public var secret: String
    public var uri: String
}

/// The signed-in user's second factor.
public struct MFAStatus: Sendable, Equatable {
    public var totp: Bool
    public var recoveryCodesLeft: Int
}

/// Which sessions `signOut` ends.
public enum SignOutScope: String, Sendable {
    /// This device's session.
    case session
    /// Every other session of the user.
    case others
    /// Every session, this one too.
    case global
}

/// What the client tells the app (`AuthClient.states`).
public enum AuthState: Sendable, Equatable {
    case signedOut
    case signedIn(User)
    case tokenRefreshed
    case userUpdated(User)
}

/// What the client keeps between launches: enough to refresh without the user.
public struct StoredSession: Sendable, Equatable, Codable {
    public var user: User
    public var sessionID: String
    public var accessToken: String
    public var accessTokenExpiresAt: Date
    /// The server's `expiresIn` for this access token; nil in a session stored by an earlier
    /// version of the library (its next refresh sets it).
    public var accessTokenLifetime: TimeInterval? = nil
    public var refreshToken: String
    public var refreshTokenExpiresAt: Date
    public var credentials: AWSCredentials?
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(Dictionary(elements) { _, last in last }) }
    public init(nilLiteral: ()) { self = .null }
}
