import LambdaAuth

/// An Auth0 user export job's file (`format: "json"`: NDJSON, one user a line, gunzipped) with the
/// fields `user_id`, `email`, `email_verified`, `name`, `picture`, `created_at`, `last_login`,
/// `blocked` and `identities` (`[{"provider", "user_id", "connection", ...}]`). Without
/// `identities`, the provider is read from the user id (`google-oauth2|1234`), as Auth0 builds it.
enum Auth0Export {
    static func read(_ bytes: [UInt8]) -> [SourceUser] {
        var users: [SourceUser] = []
        var lineNumber = 0
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { continue }
            let position = "line \(lineNumber)"
            guard let record = try? JSONValue.parse(line) else {
                users.append(.invalid(position, "not a JSON object"))
                continue
            }
            users.append(user(record, position: position))
        }
        return users
    }

    static func user(_ record: JSONValue, position: String) -> SourceUser {
        guard case .object(let fields) = record else { return .invalid(position, "not a JSON object") }
        guard let id = SourceValues.text(fields["user_id"]) else { return .invalid(position, "no user_id") }
        var user = SourceUser(position: position)
        user.id = id
        user.email = SourceValues.text(fields["email"])
        user.emailVerified = SourceValues.flag(fields["email_verified"])
        user.displayName = SourceValues.text(fields["name"])
        user.pictureURL = SourceValues.text(fields["picture"])
        guard let created = fields["created_at"] else { return .invalid(position, id: id, "no created_at") }
        user.createdAt = SourceValues.instant(created)
        user.lastSignInAt = SourceValues.instant(fields["last_login"])
        user.disabled = SourceValues.flag(fields["blocked"])
        if let identities = fields["identities"] {
            guard let entries = identities.arrayValue else { return .invalid(position, id: id, "identities is not an array") }
            for entry in entries {
                guard let provider = SourceValues.text(entry["provider"]), let subject = SourceValues.text(entry["user_id"]) else {
                    return .invalid(position, id: id, "an identity without provider and user_id")
                }
                user.identities.append(.init(provider: provider, subject: subject, email: SourceValues.text(entry["profileData"]?["email"])))
            }
        } else if let bar = id.firstIndex(of: "|") {
            user.identities.append(.init(provider: String(id[..<bar]), subject: String(id[id.index(after: bar)...]), email: nil))
        }
        return user
    }
}
