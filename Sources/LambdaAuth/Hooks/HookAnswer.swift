/// What a hook may answer (contract section 19), checked before anything is taken from it: any
/// other answer is the hook's error, not a decision.
enum HookAnswer {
    /// A larger answer is refused while it is read.
    static let maximumBytes = 16 << 10
    static let maximumMessageCharacters = 200
    static let maximumClaimsBytes = 2048
    /// Claims that our tokens' meaning rests on: a hook never replaces them.
    static let reservedClaims: Set<String> = [
        "iss", "sub", "aud", "exp", "nbf", "iat", "jti", "sid", "app_metadata", "aal", "amr", "scope", "client_id",
        "token_use", "cnf",
    ]

    enum Decision: Equatable {
        case allow
        case deny(message: String?)
    }

    struct Invalid: Error, Sendable {
        let reason: String
    }

    /// A `before` hook's answer: `{"decision": "allow"}` or `{"decision": "deny", "message"?}`.
    static func decision(_ body: [UInt8]) throws(Invalid) -> Decision {
        let document = try object(body)
        switch document["decision"]?.stringValue {
        case "allow":
            return .allow
        case "deny":
            guard let message = document["message"], !message.isNull else { return .deny(message: nil) }
            guard let text = message.stringValue, text.count <= maximumMessageCharacters else {
                throw Invalid(reason: "its message is not a string of at most \(maximumMessageCharacters) characters")
            }
            return .deny(message: text.isEmpty ? nil : text)
        default:
            throw Invalid(reason: "its answer has no decision \"allow\" or \"deny\"")
        }
    }

    /// An `accessTokenClaims` answer: `{"claims": {...}}`, at most 2,048 bytes of compact JSON,
    /// no reserved name.
    static func claims(_ body: [UInt8]) throws(Invalid) -> [String: JSONValue] {
        guard let claims = try object(body)["claims"]?.objectValue else {
            throw Invalid(reason: "its answer has no claims object")
        }
        let size = JSONValue.object(claims).serializedBytes().count
        guard size <= maximumClaimsBytes else {
            throw Invalid(reason: "its claims take \(size) bytes, more than \(maximumClaimsBytes)")
        }
        if let reserved = claims.keys.sorted().first(where: { reservedClaims.contains($0) }) {
            throw Invalid(reason: "its claims name the reserved claim \(reserved)")
        }
        return claims
    }

    static func object(_ body: [UInt8]) throws(Invalid) -> [String: JSONValue] {
        guard body.count <= maximumBytes else { throw Invalid(reason: "its answer is larger than 16 KiB") }
        guard let document = try? JSONValue.parse(body), let members = document.objectValue else {
            throw Invalid(reason: "its answer is not a JSON object")
        }
        return members
    }
}
