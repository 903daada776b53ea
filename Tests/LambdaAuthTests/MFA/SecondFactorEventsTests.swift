@testable import LambdaAuth
import Testing

/// What the second factor publishes (contract section 22) and how its requests are named on the
/// event line (section 18): only an active factor's arrival and departure, never a pending
/// enrolment, a challenge or a counter, and nothing of the secret or the codes.
@Suite struct SecondFactorEventsTests {
    static func change(_ sk: String, old: Item?, new: Item?) -> ItemChange {
        ItemChange(key: TableKey(pk: "USER#u1", sk: sk), old: old, new: new, eventID: "e-1", sequenceNumber: "100",
                   committedAt: 1_700_000_000_123)!
    }

    static func factor(_ status: String, _ extra: Item = [:]) -> Item {
        var item: Item = ["PK": .s("USER#u1"), "SK": .s("MFA#TOTP"), "status": .s(status), "sealedSecret": .s("sealed"),
                          "lastUsedStep": .n(1), "recoveryCodes": .m(["hash": .n(1)])]
        for (name, value) in extra { item[name] = value }
        return item
    }

    static func event(_ change: ItemChange) -> AuthEvent? {
        ItemEvents.event(for: change, options: ItemEvents.Options(source: "https://auth.example.com"))
    }

    @Test func anActiveFactorIsEnrolledAndItsDeletionRemoved() throws {
        #expect(Self.event(Self.change("MFA#TOTP", old: nil, new: Self.factor("pending"))) == nil, "a pending enrolment means nothing yet")
        let enrolled = try #require(Self.event(Self.change("MFA#TOTP", old: Self.factor("pending"), new: Self.factor("active"))))
        #expect(enrolled.type == .mfaEnrolled && enrolled.data == ["factor": "totp", "userId": "u1"])
        // A step or a recovery code used changes what no event reads.
        #expect(Self.event(Self.change("MFA#TOTP", old: Self.factor("active"), new: Self.factor("active", ["lastUsedStep": .n(2)]))) == nil)
        let removed = try #require(Self.event(Self.change("MFA#TOTP", old: Self.factor("active"), new: nil)))
        #expect(removed.type == .mfaRemoved)
        #expect(Self.event(Self.change("MFA#TOTP", old: Self.factor("pending"), new: nil)) == nil, "an unconfirmed enrolment expiring")
        #expect(ItemEvents.readAttributes(of: TableKey(pk: "USER#u1", sk: "MFA#TOTP")) == ["PK", "SK", "status"],
                "the change log keeps no secret and no code hash")
    }

    @Test func challengesAndCountersPublishNothing() {
        let challenge: Item = ["PK": .s("USER#u1"), "SK": .s("MFA_CHALLENGE#abc"), "provider": .s("google"), "subject": .s("1")]
        #expect(Self.event(Self.change("MFA_CHALLENGE#abc", old: nil, new: challenge)) == nil)
        #expect(Self.event(Self.change("MFA#WRONG_CODES", old: nil, new: ["PK": .s("USER#u1"), "SK": .s("MFA#WRONG_CODES")])) == nil)
    }

    @Test func theEventLineNamesWhatTheActionDid() {
        func name(_ action: String, status: Int = 200, code: String? = nil) -> String {
            let request = InvocationRequest(kind: .direct, body: ["action": .string(action)])
            let response = InvocationResponse(status: status, body: code.map { ["error": ["code": .string($0)]] } ?? ["ok": true])
            return SecurityEvent.of(handler: "mfa", request: request, response: response).name
        }
        #expect(name("totp-confirm") == "mfa_enrolled")
        #expect(name("totp-remove") == "mfa_removed")
        #expect(name("challenge") == "signin")
        #expect(name("step-up") == "mfa_step_up")
        #expect(name("status") == "mfa")
        #expect(name("challenge", status: 401, code: "MFA_CODE_INVALID") == "mfa_challenge_failed")
        #expect(name("challenge", status: 401, code: "MFA_TOKEN_INVALID") == "mfa_challenge_failed")
        #expect(name("totp-remove", status: 403, code: "AAL2_REQUIRED") == "mfa_failed")
    }
}
