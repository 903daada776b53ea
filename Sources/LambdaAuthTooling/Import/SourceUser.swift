import LambdaAuth

/// The systems `authctl users import --from` reads, each with its own export format.
public enum ImportSystem: String, Sendable, CaseIterable {
    case firebase, auth0, cognito

    /// Their provider names for the identities we know without being told, as each system
    /// records them. `password` stands for the system's own email-and-password (or passwordless
    /// email) accounts: no secret of theirs is imported, but a verified address becomes our
    /// `email` identity, so that such a user signs in with an email code.
    var builtInProviders: [String: MappedProvider] {
        switch self {
        case .firebase: return ["google.com": .ours(.google), "apple.com": .ours(.apple), "password": .password]
        case .auth0: return ["google-oauth2": .ours(.google), "apple": .ours(.apple), "auth0": .password, "email": .password]
        case .cognito: return ["Google": .ours(.google), "SignInWithApple": .ours(.apple), "password": .password]
        }
    }

    /// Reads a whole export into records, in the file's order. A record that cannot be read as a
    /// user comes back as an invalid record (skipped with its reason); a file that is not the
    /// format at all is an error.
    public func read(_ bytes: [UInt8]) throws(ImportFormatError) -> [SourceUser] {
        switch self {
        case .firebase: return try FirebaseExport.read(bytes)
        case .auth0: return Auth0Export.read(bytes)
        case .cognito: return try CognitoExport.read(bytes)
        }
    }
}

public struct ImportFormatError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

enum MappedProvider: Equatable {
    case ours(ProviderName)
    case password
}

/// One user of an export as its system records it, before any decision of ours.
public struct SourceUser: Sendable {
    public struct Identity: Sendable, Equatable {
        /// The system's own provider name (`google.com`, `google-oauth2`, `Google`).
        public var provider: String
        public var subject: String
        public var email: String?
    }

    /// Where the record is in the file (`user 3`, `line 7`), for the summary.
    public var position: String
    public var id: String?
    public var email: String?
    public var emailVerified = false
    public var displayName: String?
    public var pictureURL: String?
    public var createdAt: Int64?
    public var lastSignInAt: Int64?
    public var disabled = false
    public var identities: [Identity] = []
    /// The reason the record cannot be a user (malformed), when it cannot.
    public var invalid: String?

    init(position: String) { self.position = position }

    static func invalid(_ position: String, id: String? = nil, _ reason: String) -> SourceUser {
        var user = SourceUser(position: position)
        user.id = id
        user.invalid = reason
        return user
    }
}

/// How an export that keeps each user as one flat object names its fields (Firebase, Auth0): the
/// shapes are the same, the names and the time units are not, so one reader takes the names.
struct FlatUserFields: Sendable {
    var id, email, emailVerified, displayName, picture, createdAt, lastSignIn, disabled: String
    var time: @Sendable (JSONValue?) -> Int64?
    /// A field whose presence means the system holds a password for the user (no secret is read).
    var password: String?
    var identities: IdentityFields
}

/// Where a format lists a user's identities and how each entry names its provider and subject.
struct IdentityFields: Sendable {
    var list: String
    /// How an entry is called in a skip's reason ("a providerUserInfo entry").
    var entryName: String
    var provider, subject: String
    var email: @Sendable (JSONValue) -> String?
}

extension SourceUser {
    static func flat(_ record: JSONValue, position: String, _ names: FlatUserFields) -> SourceUser {
        guard case .object(let fields) = record else { return .invalid(position, "not a JSON object") }
        guard let id = SourceValues.text(fields[names.id]) else { return .invalid(position, "no \(names.id)") }
        var user = SourceUser(position: position)
        user.id = id
        user.email = SourceValues.text(fields[names.email])
        user.emailVerified = SourceValues.flag(fields[names.emailVerified])
        user.displayName = SourceValues.text(fields[names.displayName])
        user.pictureURL = SourceValues.text(fields[names.picture])
        user.createdAt = names.time(fields[names.createdAt])
        user.lastSignInAt = names.time(fields[names.lastSignIn])
        user.disabled = SourceValues.flag(fields[names.disabled])
        if let password = names.password, fields[password] != nil {
            user.identities.append(.init(provider: "password", subject: id, email: user.email))
        }
        if let list = fields[names.identities.list] {
            guard let entries = list.arrayValue else { return .invalid(position, id: id, "\(names.identities.list) is not an array") }
            if let problem = user.appendIdentities(entries, names.identities) { return .invalid(position, id: id, problem) }
        }
        return user
    }

    /// The reason when an entry lacks its provider or subject; a second `password` entry (Firebase
    /// lists the password both ways) is one identity.
    mutating func appendIdentities(_ entries: [JSONValue], _ names: IdentityFields) -> String? {
        for entry in entries {
            guard let provider = SourceValues.text(entry[names.provider]), let subject = SourceValues.text(entry[names.subject]) else {
                return "\(names.entryName) without \(names.provider) and \(names.subject)"
            }
            if provider == "password", identities.contains(where: { $0.provider == "password" }) { continue }
            identities.append(.init(provider: provider, subject: subject, email: names.email(entry)))
        }
        return nil
    }
}

/// Small readers shared by the formats: each export spells times and flags its own way.
enum SourceValues {
    /// Epoch milliseconds as a number or a string of digits (Firebase, Cognito's identities).
    static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .number(let text)?, .string(let text)?:
            guard let milliseconds = Double(text), milliseconds.isFinite, milliseconds >= 0 else { return nil }
            return Int64(milliseconds / 1000)
        default: return nil
        }
    }

    /// Epoch seconds (fractional) as a number, or an ISO 8601 string (Auth0; Cognito as the CLI prints it).
    static func instant(_ value: JSONValue?) -> Int64? {
        switch value {
        case .number(let text)?:
            guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else { return nil }
            return Int64(seconds)
        case .string(let text)?:
            if let seconds = ISO8601.parse(normalizedISO8601(text)) { return Int64(seconds.rounded(.down)) }
            return Double(text).flatMap { $0.isFinite && $0 >= 0 ? Int64($0) : nil }
        default: return nil
        }
    }

    /// The CLI prints `2024-01-31T10:00:00.123000+00:00`; Auth0 `2024-01-31T10:00:00.123Z`: both
    /// as our parser reads them (a space for the `T` too, as some tools write).
    static func normalizedISO8601(_ text: String) -> String {
        String(text.map { $0 == " " ? "T" : $0 })
    }

    /// `true`, or the string `"true"` (Cognito's attributes are all strings).
    static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let flag)?: return flag
        case .string(let text)?: return text == "true"
        default: return false
        }
    }

    /// A non-empty string; a number's text (ids that a tool wrote as numbers).
    static func text(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)? where !text.isEmpty: return text
        case .number(let text)?: return text
        default: return nil
        }
    }
}
