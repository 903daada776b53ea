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

    static let fields = FlatUserFields(
        id: "user_id", email: "email", emailVerified: "email_verified", displayName: "name", picture: "picture",
        createdAt: "created_at", lastSignIn: "last_login", disabled: "blocked", time: SourceValues.instant, password: nil,
        identities: IdentityFields(list: "identities", entryName: "an identity", provider: "provider", subject: "user_id",
                                   email: { SourceValues.text($0["profileData"]?["email"]) }))

    static func user(_ record: JSONValue, position: String) -> SourceUser {
        var user = SourceUser.flat(record, position: position, fields)
        // Without `identities`, Auth0's own id names the provider (`google-oauth2|1234`).
        if user.invalid == nil, record["identities"] == nil, let id = user.id, let bar = id.firstIndex(of: "|") {
            user.identities.append(.init(provider: String(id[..<bar]), subject: String(id[id.index(after: bar)...]), email: nil))
        }
        return user
    }
}
