/// How a session was proven (contract section 21): the authenticator assurance level `aal` and
/// the RFC 8176 methods `amr`, in every access token of the session. Recorded on the session and
/// on its refresh tokens, so that a refresh (which reads only its token) keeps them.
struct Assurance: Sendable, Equatable {
    enum Level: String, Sendable { case aal1, aal2 }
    var level: Level
    var methods: [String]

    /// TOTP and recovery codes alike: both are one-time passwords (RFC 8176 `otp`).
    static let secondFactorMethod = "otp"

    /// A session recorded before sessions knew how they were proven: one factor, methods unknown.
    static let unknown = Assurance(level: .aal1, methods: [])

    /// A guest proves nothing; the provider's name says so.
    static let guest = Assurance(level: .aal1, methods: ["guest"])

    /// The first factor: the provider's name; a passkey is a hardware key (`hwk`), and with user
    /// verification (`user`) two factors already.
    static func of(_ proof: ProvenIdentity) -> Assurance {
        var assurance: Assurance
        if proof.identity.provider == .passkey {
            assurance = proof.userVerified ? Assurance(level: .aal2, methods: ["hwk", "user"]) : Assurance(level: .aal1, methods: ["hwk"])
        } else {
            assurance = Assurance(level: .aal1, methods: [proof.identity.provider.rawValue])
        }
        if proof.passedSecondFactor { assurance = assurance.raised() }
        return assurance
    }

    /// After a second factor: aal2, `otp` added once.
    func raised() -> Assurance {
        Assurance(level: .aal2, methods: methods.contains(Assurance.secondFactorMethod) ? methods : methods + [Assurance.secondFactorMethod])
    }

    /// The access token's claims; `amr` only when known.
    var claims: [String: JSONValue] {
        var claims: [String: JSONValue] = ["aal": .string(level.rawValue)]
        if !methods.isEmpty { claims["amr"] = .array(methods.map(JSONValue.string)) }
        return claims
    }

    /// What a session or refresh-token item records; `.unknown` for items written before.
    init(item: Item) {
        level = item["aal"]?.stringValue.flatMap(Level.init(rawValue:)) ?? .aal1
        methods = item["amr"]?.listValue?.compactMap(\.stringValue) ?? []
    }

    init(level: Level, methods: [String]) {
        self.level = level
        self.methods = methods
    }

    /// An access token's (a caller's) claims.
    init(claims: AccessTokenClaims) {
        level = claims.claims["aal"]?.stringValue.flatMap(Level.init(rawValue:)) ?? .aal1
        methods = claims.claims["amr"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    func store(in item: inout Item) {
        item["aal"] = .s(level.rawValue)
        item["amr"] = .l(methods.map(AttributeValue.s))
    }

    /// The attribute values of an UpdateItem that records this assurance.
    var updateValues: [String: AttributeValue] {
        [":aal": .s(level.rawValue), ":amr": .l(methods.map(AttributeValue.s))]
    }
}
