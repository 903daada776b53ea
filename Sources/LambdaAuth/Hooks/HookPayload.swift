/// What a hook is sent (contract section 19): who is signing in or up, the user, the session.
/// Never a token, a code, a secret or a credential: only what identifies.
struct HookPayload: Sendable {
    var type: HookType
    /// The sign-in's provider (`guest` for a guest); nil on a refresh, which proves no identity.
    var provider: String?
    /// The proven identity; nil for guests and refreshes.
    var identity: VerifiedIdentity?
    /// The contract's user object; nil in `beforeUserCreated`.
    var user: JSONValue?
    /// Only in `accessTokenClaims`: the session the token is for.
    var sessionID: String?
    var device: [String: String] = [:]

    /// The document sent, `id` being the call's `webhook-id` and `time` the product clock's.
    func json(id: String, time: Int64, request: HookRequest) -> JSONValue {
        var document: [String: JSONValue] = [
            "type": .string(type.rawValue), "id": .string(id), "time": .string(Timestamps.format(time)),
            "requestId": .string(request.requestID), "provider": provider.map(JSONValue.string) ?? .null,
            "identity": identity.map(HookPayload.identityJSON) ?? .null, "user": user ?? .null,
            "session": sessionID.map { (id: String) -> JSONValue in ["id": .string(id)] } ?? .null,
        ]
        if let sourceIP = request.sourceIP { document["sourceIp"] = .string(sourceIP) }
        if !device.isEmpty { document["device"] = .object(device.mapValues(JSONValue.string)) }
        return .object(document)
    }

    static func identityJSON(_ identity: VerifiedIdentity) -> JSONValue {
        ["provider": .string(identity.provider.rawValue), "subject": .string(identity.subject),
         "email": identity.email.map(JSONValue.string) ?? .null, "emailVerified": .bool(identity.emailVerified)]
    }
}
