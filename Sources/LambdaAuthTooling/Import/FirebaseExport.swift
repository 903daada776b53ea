import LambdaAuth

/// `firebase auth:export FILE --format=json`: `{"users": [{"localId", "email", "emailVerified",
/// "displayName", "photoUrl", "createdAt" (epoch ms, a string), "lastSignedInAt", "disabled",
/// "passwordHash", "providerUserInfo": [{"providerId", "rawId", "email", ...}]}]}`.
enum FirebaseExport {
    static func read(_ bytes: [UInt8]) throws(ImportFormatError) -> [SourceUser] {
        var users: [SourceUser] = []
        var parser = JSONParser(bytes: bytes)
        do {
            // Element by element: a 100,000-user export never becomes one tree of values.
            try parser.parseDocument { (parser: inout JSONParser) throws(JSONParseError) in
                try parser.parseMembers { (parser: inout JSONParser, name: String, _: Int) throws(JSONParseError) in
                    guard name == "users" else {
                        _ = try parser.parseValue()
                        return
                    }
                    try parser.parseElements { (parser: inout JSONParser) throws(JSONParseError) in
                        users.append(user(try parser.parseValue(), position: "user \(users.count + 1)"))
                    }
                }
            }
        } catch {
            throw ImportFormatError("not a Firebase auth:export JSON file ({\"users\": [...]}): \(error)")
        }
        return users
    }

    static func user(_ record: JSONValue, position: String) -> SourceUser {
        guard case .object(let fields) = record else { return .invalid(position, "not a JSON object") }
        guard let id = SourceValues.text(fields["localId"]) else { return .invalid(position, "no localId") }
        var user = SourceUser(position: position)
        user.id = id
        user.email = SourceValues.text(fields["email"])
        user.emailVerified = SourceValues.flag(fields["emailVerified"])
        user.displayName = SourceValues.text(fields["displayName"])
        user.pictureURL = SourceValues.text(fields["photoUrl"])
        user.createdAt = SourceValues.milliseconds(fields["createdAt"])
        user.lastSignInAt = SourceValues.milliseconds(fields["lastSignedInAt"])
        user.disabled = SourceValues.flag(fields["disabled"])
        if fields["passwordHash"] != nil { user.identities.append(.init(provider: "password", subject: id, email: user.email)) }
        if let providers = fields["providerUserInfo"] {
            guard let entries = providers.arrayValue else { return .invalid(position, id: id, "providerUserInfo is not an array") }
            for entry in entries {
                guard let provider = SourceValues.text(entry["providerId"]), let subject = SourceValues.text(entry["rawId"]) else {
                    return .invalid(position, id: id, "a providerUserInfo entry without providerId and rawId")
                }
                if provider == "password", user.identities.contains(where: { $0.provider == "password" }) { continue }
                user.identities.append(.init(provider: provider, subject: subject, email: SourceValues.text(entry["email"])))
            }
        }
        return user
    }
}
