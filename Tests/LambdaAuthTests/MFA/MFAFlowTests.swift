import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Contract section 21 in process, on both backends, with pyotp as the user's authenticator:
/// enrolment, the sign-in's challenge at the step boundaries, aal and amr in every access token
/// and kept by refresh, step-up, and every hostile attempt of issue 41 refused with its code,
/// leaving the store as it was but for the attempt counters.
@Suite(.serialized) struct MFAFlowTests {
    /// AUTH_DATA_KEY: 32 bytes, 0 to 31.
    static let mfaOn = ["AUTH_MFA": "optional", "AUTH_DATA_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="]

    struct Session {
        var userID: String
        var accessToken: String
        var refreshToken: String

        init(_ body: JSONValue) throws {
            userID = try #require(body["user"]?["id"]?.stringValue)
            accessToken = try #require(body["tokens"]?["accessToken"]?.stringValue)
            refreshToken = try #require(body["tokens"]?["refreshToken"]?.stringValue)
        }
    }

    static func call(_ world: FlowWorld, _ entry: HandlerEntry, _ fields: [String: JSONValue]) throws(AuthError) -> JSONValue {
        do {
            return try world.inProcess().handler(entry).handle(InvocationRequest(kind: .direct, method: "POST", body: fields),
                                                               context: InvocationContext(requestID: "test", logger: .jsonLines(level: .error))).body
        } catch { throw AuthError.from(error) }
    }

    static func mfa(_ world: FlowWorld, _ action: String, _ fields: [String: JSONValue] = [:], token: String? = nil) throws(AuthError) -> JSONValue {
        var body = fields
        body["action"] = .string(action)
        if let token { body["accessToken"] = .string(token) }
        return try call(world, HandlerCatalogue.mfa, body)
    }

    /// The refusal's code, or nil when it was answered.
    static func refusal(_ body: () throws -> Any) -> String? {
        do { _ = try body(); return nil } catch { return AuthError.from(error).code.rawValue }
    }

    static func signIn(_ world: FlowWorld, _ subject: String, device: String? = nil) throws(AuthError) -> JSONValue {
        // Issued at the handlers' clock, which the tests move by more than an ID token lives.
        let token = world.googleToken(subject: subject, email: "\(subject)@example.com",
                                      changes: ["iat": .number(world.now), "exp": .number(world.now + 3600)])
        var fields: [String: JSONValue] = ["provider": "google", "idToken": .string(token)]
        if let device { fields["device"] = ["id": .string(device)] }
        return try call(world, HandlerCatalogue.signin, fields)
    }

    /// A sign-in that must answer MFA_REQUIRED; its mfaToken.
    static func mfaToken(_ world: FlowWorld, _ subject: String, device: String? = nil) throws -> String {
        do {
            _ = try signIn(world, subject, device: device)
        } catch {
            #expect(error.code == .mfaRequired && error.status == 403, "\(error)")
            #expect(error.details["factors"] == ["totp", "recovery"])
            return try #require(error.details["mfaToken"]?.stringValue)
        }
        Issue.record("\(subject) signed in without a second factor")
        return ""
    }

    static func challenge(_ world: FlowWorld, _ token: String, code: String? = nil, recoveryCode: String? = nil,
                          device: String? = nil) throws(AuthError) -> JSONValue {
        var fields: [String: JSONValue] = ["mfaToken": .string(token)]
        if let code { fields["code"] = .string(code) }
        if let recoveryCode { fields["recoveryCode"] = .string(recoveryCode) }
        if let device { fields["device"] = ["id": .string(device)] }
        return try mfa(world, "challenge", fields)
    }

    /// The access token's payload.
    static func claims(_ accessToken: String) throws -> JSONValue {
        let parts = accessToken.split(separator: ".")
        try #require(parts.count == 3)
        return try JSONValue.parse(try #require(Base64.urlDecoded(parts[1])))
    }

    /// A Google user who enrolled and confirmed a factor from its first session; pyotp holds the secret.
    static func enrolled(_ world: FlowWorld, _ subject: String) throws -> (session: Session, peer: TOTPPeer, recoveryCodes: [String]) {
        let session = try Session(try signIn(world, subject))
        let enrolment = try mfa(world, "totp-enroll", token: session.accessToken)
        let peer = try TOTPPeer(uri: try #require(enrolment["uri"]?.stringValue))
        #expect(peer.parsed["secret"] == enrolment["secret"], "the uri carries the secret the answer shows")
        let confirmed = try mfa(world, "totp-confirm", ["code": .string(try peer.code(at: world.now))], token: session.accessToken)
        return (session, peer, (confirmed["recoveryCodes"]?.arrayValue ?? []).compactMap(\.stringValue))
    }

    /// A six-digit code that is none of the current window's.
    static func wrongCode(_ peer: TOTPPeer, at now: Int64) throws -> String {
        let window = Set(try peer.codes(at: [now - 30, now, now + 30]))
        return try #require(["000000", "111111", "222222", "333333"].first { !window.contains($0) })
    }

    /// The store as a refusal may leave it: the challenges' attempts and the wrong-code counter
    /// are the counters the limits need; everything else must be as it was.
    static func withoutCounters(_ items: [Item]) -> [Item] {
        items.compactMap { item -> Item? in
            let sk = item["SK"]?.stringValue ?? ""
            if sk == "MFA#WRONG_CODES" { return nil }
            var kept = item
            if sk.hasPrefix("MFA_CHALLENGE#") { kept.removeValue(forKey: "attempts") }
            return kept
        }
    }

    static func sessionCount(_ world: FlowWorld, _ userID: String) throws -> Int {
        try world.allItems().count { $0["PK"]?.stringValue == "USER#\(userID)" && $0["SK"]?.stringValue?.hasPrefix("SESSION#") == true }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func enrolmentGivesAPyotpReadableURIAndTenRecoveryCodes(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(MFAFlowTests.mfaOn, backend: backend)
        let (session, peer, codes) = try MFAFlowTests.enrolled(world, "ada")
        #expect(peer.parsed["issuer"] == "lambda-auth" && peer.parsed["name"] == "ada@example.com")
        #expect(peer.parsed["algorithm"] == "sha1" && peer.parsed["digits"] == 6 && peer.parsed["interval"] == 30)
        #expect(codes.count == 10 && Set(codes).count == 10)
        #expect(codes.allSatisfy { $0.utf8.count == 10 && $0.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x32 && $0 <= 0x37) } })
        // The first session's token was issued before: one factor, the provider's name.
        let first = try MFAFlowTests.claims(session.accessToken)
        #expect(first["aal"] == "aal1" && first["amr"] == ["google"])
        let status = try MFAFlowTests.mfa(world, "status", token: session.accessToken)
        #expect(status["totp"] == true && status["recoveryCodesLeft"] == 10)
        #expect(MFAFlowTests.refusal { try MFAFlowTests.mfa(world, "totp-enroll", token: session.accessToken) } == "MFA_ALREADY_ENROLLED")
        // The confirmation raised the caller's session: its refresh says aal2 from now on.
        let refreshed = try MFAFlowTests.call(world, HandlerCatalogue.refresh, ["refreshToken": .string(session.refreshToken)])
        let raised = try MFAFlowTests.claims(try #require(refreshed["tokens"]?["accessToken"]?.stringValue))
        #expect(raised["aal"] == "aal2" && raised["amr"] == ["google", "otp"])
        // Nothing of the secret or the codes is stored in the clear.
        let factor = try #require(try world.allItems().first { $0["SK"]?.stringValue == "MFA#TOTP" })
        let stored = "\(factor)"
        #expect(!stored.contains(try #require(peer.parsed["secret"]?.stringValue)) && !codes.contains { stored.contains($0) })
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func pyotpCodesSignInOneStepEitherSideAndNotTwo(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(MFAFlowTests.mfaOn, backend: backend)
        let (_, peer, _) = try MFAFlowTests.enrolled(world, "ada")
        // The first second of a step well past the confirmation's.
        let boundary = (world.now / 30 + 10) * 30
        world.advanceClock(by: boundary - world.now)
        let before = try world.allItems()
        let first = try MFAFlowTests.mfaToken(world, "ada")
        let added = try world.allItems().filter { item in !before.contains(item) }
        #expect(added.count == 1 && added.first?["SK"]?.stringValue?.hasPrefix("MFA_CHALLENGE#") == true,
                "MFA_REQUIRED writes its challenge and nothing else")
        let early = try peer.codes(at: [boundary - 60, boundary + 60, boundary - 30])
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, first, code: early[0]) } == "MFA_CODE_INVALID", "-2 steps")
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, first, code: early[1]) } == "MFA_CODE_INVALID", "+2 steps")
        let signedIn = try MFAFlowTests.challenge(world, first, code: early[2])
        let claims = try MFAFlowTests.claims(try #require(signedIn["tokens"]?["accessToken"]?.stringValue))
        #expect(claims["aal"] == "aal2" && claims["amr"] == ["google", "otp"], "-1 step signs in at aal2")
        // The last second of the same step: +2 refused, +1 signs in.
        world.advanceClock(by: 29)
        let second = try MFAFlowTests.mfaToken(world, "ada")
        let late = try peer.codes(at: [boundary + 60, boundary + 30])
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, second, code: late[0]) } == "MFA_CODE_INVALID", "+2 steps")
        let again = try MFAFlowTests.challenge(world, second, code: late[1])
        // A refresh keeps what the session was proven with.
        let session = try Session(again)
        let refreshed = try MFAFlowTests.call(world, HandlerCatalogue.refresh, ["refreshToken": .string(session.refreshToken)])
        let kept = try MFAFlowTests.claims(try #require(refreshed["tokens"]?["accessToken"]?.stringValue))
        #expect(kept["aal"] == "aal2" && kept["amr"] == ["google", "otp"])
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func hostileAttemptsAreRefusedAndChangeNothingButTheCounters(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(MFAFlowTests.mfaOn, backend: backend)
        let (first, peer, recovery) = try MFAFlowTests.enrolled(world, "ada")
        let (_, otherPeer, _) = try MFAFlowTests.enrolled(world, "bob")
        world.advanceClock(by: 90)
        let now = world.now
        let right = try peer.code(at: now)
        let wrong = try MFAFlowTests.wrongCode(peer, at: now)

        // Another user's code.
        let token = try MFAFlowTests.mfaToken(world, "ada")
        var before = MFAFlowTests.withoutCounters(try world.allItems())
        let bobs = try otherPeer.code(at: now)
        if bobs != right {
            #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, token, code: bobs) } == "MFA_CODE_INVALID")
            #expect(MFAFlowTests.withoutCounters(try world.allItems()) == before, "another user's code changed the store")
        }
        // The right code signs in once.
        let sessionsBefore = try MFAFlowTests.sessionCount(world, first.userID)
        _ = try MFAFlowTests.challenge(world, token, code: right)
        #expect(try MFAFlowTests.sessionCount(world, first.userID) == sessionsBefore + 1)
        // The token reused, and the code replayed under a new token.
        before = MFAFlowTests.withoutCounters(try world.allItems())
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, token, code: right) } == "MFA_TOKEN_INVALID", "reused")
        let replayToken = try MFAFlowTests.mfaToken(world, "ada")
        before = MFAFlowTests.withoutCounters(try world.allItems())
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, replayToken, code: right) } == "MFA_CODE_INVALID", "replayed")
        #expect(MFAFlowTests.withoutCounters(try world.allItems()) == before, "a replayed code changed the store")
        // Another device.
        let deviceToken = try MFAFlowTests.mfaToken(world, "ada", device: "phone-1")
        before = MFAFlowTests.withoutCounters(try world.allItems())
        world.advanceClock(by: 30)
        let next = try peer.code(at: world.now)
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, deviceToken, code: next, device: "phone-2") } == "MFA_TOKEN_INVALID")
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, deviceToken, code: next) } == "MFA_TOKEN_INVALID", "no device")
        #expect(MFAFlowTests.withoutCounters(try world.allItems()) == before)
        // Expired: 300 s.
        let expiring = try MFAFlowTests.mfaToken(world, "ada")
        world.advanceClock(by: 301)
        before = MFAFlowTests.withoutCounters(try world.allItems())
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, expiring, code: try peer.code(at: world.now)) } == "MFA_TOKEN_INVALID")
        #expect(MFAFlowTests.withoutCounters(try world.allItems()) == before)
        // Guessed six times: five wrong codes end it, and then even the right one is refused.
        let guessed = try MFAFlowTests.mfaToken(world, "ada")
        let wrongNow = try MFAFlowTests.wrongCode(peer, at: world.now)
        for _ in 0..<5 {
            #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, guessed, code: wrongNow) } == "MFA_CODE_INVALID")
        }
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, guessed, code: try peer.code(at: world.now)) } == "MFA_TOKEN_INVALID")
        // A recovery code works once.
        let recoveryToken = try MFAFlowTests.mfaToken(world, "ada")
        let recovered = try MFAFlowTests.challenge(world, recoveryToken, recoveryCode: recovery[0].uppercased())
        let recoveredClaims = try MFAFlowTests.claims(try #require(recovered["tokens"]?["accessToken"]?.stringValue))
        #expect(recoveredClaims["aal"] == "aal2")
        let twice = try MFAFlowTests.mfaToken(world, "ada")
        before = MFAFlowTests.withoutCounters(try world.allItems())
        #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, twice, recoveryCode: recovery[0]) } == "MFA_CODE_INVALID")
        #expect(MFAFlowTests.withoutCounters(try world.allItems()) == before)
        let status = try MFAFlowTests.mfa(world, "status", token: try Session(recovered).accessToken)
        #expect(status["recoveryCodesLeft"] == 9)
        // At aal1 (the token of the session opened before the factor): refused, store exactly as it was.
        let exactly = try world.allItems()
        for action in ["totp-remove", "recovery-codes"] {
            #expect(MFAFlowTests.refusal { try MFAFlowTests.mfa(world, action, token: first.accessToken) } == "AAL2_REQUIRED", "\(action)")
        }
        #expect(MFAFlowTests.refusal { try MFAFlowTests.call(world, HandlerCatalogue.deleteAccount, ["accessToken": .string(first.accessToken)]) }
                == "AAL2_REQUIRED")
        #expect(try world.allItems() == exactly)
        _ = wrong
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func elevenWrongCodesInAnHourAcrossTokensAreRateLimited(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(MFAFlowTests.mfaOn, backend: backend)
        let (_, peer, _) = try MFAFlowTests.enrolled(world, "cy")
        world.advanceClock(by: 90)
        let wrong = try MFAFlowTests.wrongCode(peer, at: world.now)
        for _ in 0..<2 {
            let token = try MFAFlowTests.mfaToken(world, "cy")
            for _ in 0..<5 {
                #expect(MFAFlowTests.refusal { try MFAFlowTests.challenge(world, token, code: wrong) } == "MFA_CODE_INVALID")
            }
        }
        // The eleventh attempt in the hour: refused before any code is tried, the right one too.
        let token = try MFAFlowTests.mfaToken(world, "cy")
        let before = MFAFlowTests.withoutCounters(try world.allItems())
        let right = try peer.code(at: world.now)
        do {
            _ = try MFAFlowTests.challenge(world, token, code: right)
            Issue.record("the eleventh code was let through")
        } catch {
            #expect(error.code == .rateLimited && error.status == 429 && (error.retryAfter ?? 0) > 0)
        }
        #expect(MFAFlowTests.withoutCounters(try world.allItems()) == before)
        // An hour later (and a slot) the user may try again.
        world.advanceClock(by: 3600 + 300)
        let later = try MFAFlowTests.mfaToken(world, "cy")
        _ = try MFAFlowTests.challenge(world, later, code: try peer.code(at: world.now))
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func stepUpRaisesAnOtherSessionAndItsRefreshesKeepIt(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(MFAFlowTests.mfaOn, backend: backend)
        // A session on another device, opened before the factor: aal1, and so are its refreshes.
        let other = try Session(try MFAFlowTests.signIn(world, "ada", device: "tablet"))
        let (_, peer, _) = try MFAFlowTests.enrolled(world, "ada")
        let refreshed = try Session(try MFAFlowTests.call(world, HandlerCatalogue.refresh, ["refreshToken": .string(other.refreshToken)]))
        #expect(try MFAFlowTests.claims(refreshed.accessToken)["aal"] == "aal1")
        let exactly = try world.allItems()
        #expect(MFAFlowTests.refusal { try MFAFlowTests.mfa(world, "totp-remove", token: refreshed.accessToken) } == "AAL2_REQUIRED")
        #expect(try world.allItems() == exactly)
        world.advanceClock(by: 60)
        let steppedUp = try MFAFlowTests.mfa(world, "step-up", ["code": .string(try peer.code(at: world.now))], token: refreshed.accessToken)
        let raised = try #require(steppedUp["tokens"]?["accessToken"]?.stringValue)
        #expect(try MFAFlowTests.claims(raised)["aal"] == "aal2" && steppedUp["session"]?["id"] == (try MFAFlowTests.claims(raised))["sid"])
        // The refresh token the client holds now refreshes to aal2.
        let after = try Session(try MFAFlowTests.call(world, HandlerCatalogue.refresh, ["refreshToken": .string(refreshed.refreshToken)]))
        #expect(try MFAFlowTests.claims(after.accessToken)["amr"] == ["google", "otp"])
        // The same code again is a replay.
        #expect(MFAFlowTests.refusal { try MFAFlowTests.mfa(world, "step-up", ["code": .string(try peer.code(at: world.now))], token: after.accessToken) }
                == "MFA_CODE_INVALID")
        // At aal2: new recovery codes, then the factor removed; sign-in is one factor again.
        let codes = try MFAFlowTests.mfa(world, "recovery-codes", token: after.accessToken)
        #expect(codes["recoveryCodes"]?.arrayValue?.count == 10)
        #expect(try MFAFlowTests.mfa(world, "totp-remove", token: after.accessToken)["removed"] == true)
        #expect(try MFAFlowTests.mfa(world, "status", token: after.accessToken)["totp"] == false)
        #expect(try world.allItems().allSatisfy { $0["SK"]?.stringValue != "MFA#TOTP" })
        _ = try Session(try MFAFlowTests.signIn(world, "ada"))
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func racingChallengesWithOneCodeOpenExactlyOneSession(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(MFAFlowTests.mfaOn, backend: backend)
        let (first, peer, _) = try MFAFlowTests.enrolled(world, "ada")
        world.advanceClock(by: 90)
        let token = try MFAFlowTests.mfaToken(world, "ada")
        let sessions = try MFAFlowTests.sessionCount(world, first.userID)
        let event: JSONValue = ["action": "challenge", "mfaToken": .string(token), "code": .string(try peer.code(at: world.now))]
        let processes = try (0..<6).map { _ in try world.start("mfa") }
        let outputs = runSimultaneously(processes.count) { processes[$0].finish(stdin: event.serializedBytes()) }
        let answered = outputs.filter { $0.json?["tokens"] != nil }
        let refused = outputs.compactMap { $0.json?["error"]?["code"]?.stringValue }
        #expect(answered.count == 1, "\(outputs.map(\.stdoutText))")
        #expect(refused.count == processes.count - 1 && refused.allSatisfy { ["MFA_TOKEN_INVALID", "MFA_CODE_INVALID"].contains($0) }, "\(refused)")
        #expect(try MFAFlowTests.sessionCount(world, first.userID) == sessions + 1)
    }

    @Test func offIsOffAndTheSettingIsChecked() throws {
        let world = FlowWorld()
        let session = try Session(try MFAFlowTests.signIn(world, "ada"))
        #expect(MFAFlowTests.refusal { try MFAFlowTests.mfa(world, "status", token: session.accessToken) } == "PROVIDER_NOT_CONFIGURED")
        #expect(MFAFlowTests.refusal { try AuthConfiguration.fromEnvironment(["AUTH_MFA": "required"]) } == "CONFIG_ERROR")
        #expect(MFAFlowTests.refusal { try AuthConfiguration.fromEnvironment(["AUTH_MFA_ISSUER": "a:b"]) } == "CONFIG_ERROR")
        let on = try AuthConfiguration.fromEnvironment(["AUTH_MFA": "optional", "AUTH_ISSUER": "https://auth.example.com"])
        #expect(on.mfa.isEnabled && on.mfa.issuer == "auth.example.com")
    }
}
