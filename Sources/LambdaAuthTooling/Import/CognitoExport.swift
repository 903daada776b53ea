import LambdaAuth

/// `aws cognito-idp list-users --user-pool-id POOL` output: `{"Users": [{"Username",
/// "Attributes": [{"Name", "Value"}], "UserCreateDate", "UserLastModifiedDate", "Enabled",
/// "UserStatus"}], "PaginationToken"?}`. The CLI joins pages into one object; pages saved one by
/// one (the API's own answers) may come as a JSON array of pages or as pages one after another.
/// Federated identities are the `identities` attribute, itself JSON text:
/// `[{"userId", "providerName", "providerType", "issuer", "primary", "dateCreated"}]`.
/// The old id is the `sub` attribute (Cognito's immutable one), else the username.
enum CognitoExport {
    static func read(_ bytes: [UInt8]) throws(ImportFormatError) -> [SourceUser] {
        var pages: [JSONValue] = []
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        var parser = JSONParser(bytes: text)
        do {
            // Pages one after another: values until only whitespace is left.
            while true {
                _ = parser.nextIs(0)  // past the whitespace
                guard parser.offset < text.count else { break }
                pages.append(try parser.parseValue())
            }
        } catch {
            throw ImportFormatError("not Cognito ListUsers output ({\"Users\": [...]}): \(error)")
        }
        guard !pages.isEmpty else { throw ImportFormatError("not Cognito ListUsers output: the file is empty") }
        var users: [SourceUser] = []
        for page in pages.flatMap({ $0.arrayValue ?? [$0] }) {
            guard let entries = page["Users"]?.arrayValue else {
                throw ImportFormatError("not Cognito ListUsers output: a page without \"Users\"")
            }
            for entry in entries { users.append(user(entry, position: "user \(users.count + 1)")) }
        }
        return users
    }

    static func user(_ record: JSONValue, position: String) -> SourceUser {
        guard case .object(let fields) = record else { return .invalid(position, "not a JSON object") }
        var attributes: [String: String] = [:]
        for attribute in fields["Attributes"]?.arrayValue ?? [] {
            if let name = attribute["Name"]?.stringValue, let value = attribute["Value"]?.stringValue { attributes[name] = value }
        }
        guard let id = attributes["sub"] ?? SourceValues.text(fields["Username"]) else { return .invalid(position, "no sub and no Username") }
        var user = SourceUser(position: position)
        user.id = id
        user.email = attributes["email"].flatMap { $0.isEmpty ? nil : $0 }
        user.emailVerified = attributes["email_verified"] == "true"
        user.displayName = attributes["name"] ?? [attributes["given_name"], attributes["family_name"]].compactMap { $0 }
            .joined(separator: " ").nilIfEmpty
        user.pictureURL = attributes["picture"]
        user.createdAt = SourceValues.instant(fields["UserCreateDate"])
        user.disabled = fields["Enabled"].map { !SourceValues.flag($0) } ?? false
        // Users of the pool itself have a password; federated ones are EXTERNAL_PROVIDER.
        if SourceValues.text(fields["UserStatus"]) != "EXTERNAL_PROVIDER" {
            user.identities.append(.init(provider: "password", subject: id, email: user.email))
        }
        if let text = attributes["identities"] {
            guard let entries = (try? JSONValue.parse(text))?.arrayValue else {
                return .invalid(position, id: id, "the identities attribute is not a JSON array")
            }
            let names = IdentityFields(list: "identities", entryName: "an identity", provider: "providerName", subject: "userId",
                                       email: { [email = user.email] _ in email })
            if let problem = user.appendIdentities(entries, names) { return .invalid(position, id: id, problem) }
        }
        return user
    }
}

private extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
