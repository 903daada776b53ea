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

    static let fields = FlatUserFields(
        id: "localId", email: "email", emailVerified: "emailVerified", displayName: "displayName", picture: "photoUrl",
        createdAt: "createdAt", lastSignIn: "lastSignedInAt", disabled: "disabled", time: SourceValues.milliseconds,
        password: "passwordHash",
        identities: IdentityFields(list: "providerUserInfo", entryName: "a providerUserInfo entry", provider: "providerId",
                                   subject: "rawId", email: { SourceValues.text($0["email"]) }))

    static func user(_ record: JSONValue, position: String) -> SourceUser {
        SourceUser.flat(record, position: position, fields)
    }
}
