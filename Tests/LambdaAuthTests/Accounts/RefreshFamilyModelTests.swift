import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// The refresh-family rules of contract section 13 as a small state machine, and seeded random
/// sequences of sign-ins, refreshes with any token ever issued, concurrent refreshes, sign-outs and
/// clock moves (within and past the grace period, past a token's expiry, past the session's
/// maximum age) checked against it step by step, on both backends. Short lifetimes (a one-hour
/// token, three-hour sessions) so that every boundary is crossed many times in a few hundred steps.
@Suite(.serialized) struct RefreshFamilyModelTests {
    static let tokenTTL: Int64 = 3600
    static let maxAge: Int64 = 10_800
    static let grace: Int64 = 30
    /// Revoked items, and live tokens past their expiry, stay readable this long.
    static let visibility: Int64 = 86_400
    static let clockMoves: [Int64] = [0, 1, 29, 30, 31, 600, 3599, 3600, 3601, 10_800]

    /// What the rules say of one family.
    struct Family {
        var createdAt: Int64
        /// Every token the family ever handed out, oldest first: the last one is the live one.
        var tokens: [String]
        /// When the live token replaced the one before it.
        var rotatedAt: Int64?
        var liveExpiresAt: Int64
        var revokedAt: Int64?

        init(token: String, now: Int64) {
            createdAt = now
            tokens = [token]
            liveExpiresAt = now + min(RefreshFamilyModelTests.tokenTTL, RefreshFamilyModelTests.maxAge)
        }

        var live: String { tokens[tokens.count - 1] }
        func alive(at now: Int64) -> Bool { revokedAt == nil && now < liveExpiresAt }

        enum Expected: Equatable {
            case rotation
            case liveAgain
            case error(String)
        }

        /// The answer to a refresh with the token at `index`, as the rules say.
        func expected(index: Int, now: Int64) -> Expected {
            if let revokedAt { return .error(now <= revokedAt + visibility ? "REFRESH_TOKEN_REVOKED" : "REFRESH_TOKEN_NOT_FOUND") }
            let end = liveExpiresAt
            if index == tokens.count - 1 {
                if now >= end { return .error(now <= end + visibility ? "REFRESH_TOKEN_EXPIRED" : "REFRESH_TOKEN_NOT_FOUND") }
                return .rotation
            }
            if index == tokens.count - 2, let rotatedAt, now - rotatedAt <= grace {
                return now >= end ? .error("REFRESH_TOKEN_EXPIRED") : .liveAgain
            }
            // The family lives while its session does (until its live token's expiry): reuse.
            return now <= end ? .error("REFRESH_TOKEN_REUSED") : .error("REFRESH_TOKEN_NOT_FOUND")
        }

        mutating func rotated(to token: String, now: Int64) {
            tokens.append(token)
            rotatedAt = now
            liveExpiresAt = min(now + tokenTTL, createdAt + maxAge)
        }
    }

    final class Run {
        let world: FlowWorld
        var flows: InProcessFlows
        var random: SplitMix64
        var families: [Family] = []
        var userIDs: [String: String] = [:]
        var familyIDs: [String] = []
        var log: [String] = []

        init(backend: FlowWorld.Backend, seed: UInt64) throws {
            world = try FlowWorld(["AUTH_REFRESH_TOKEN_TTL": String(tokenTTL), "AUTH_SESSION_MAX_AGE": String(maxAge),
                                   "AUTH_REFRESH_GRACE": String(grace), "AUTH_MAX_SESSIONS": "1000",
                                   "AUTH_CREDENTIALS": "local", "AUTH_CREDENTIALS_SECRET": "model-test-credentials-secret"],
                                  backend: backend)
            flows = try world.inProcess()
            random = SplitMix64(seed: seed)
        }

        var now: Int64 { world.now }

        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }

        func step() throws {
            let roll = pick(100)
            switch roll {
            case 0..<10: try signIn()
            case 10..<25: moveClock()
            case 25..<30 where !families.isEmpty: try concurrentRefresh()
            case 30..<35 where !families.isEmpty: try signOut()
            case 35..<37: refresh(garbage: true)
            case 37..<45 where !families.isEmpty: try retryAtTheGraceEdge()
            default: if families.isEmpty { try signIn() } else { refresh(garbage: false) }
            }
        }

        func signIn() throws {
            let subject = "model-\(pick(3))"
            let idToken = world.googleToken(subject: subject, email: nil,
                                            changes: ["iat": .number(now), "exp": .number(now + 3600)])
            let body = try flows.signIn(idToken: idToken)
            let token = try #require(body["tokens"]?["refreshToken"]?.stringValue)
            #expect(body["tokens"]?["refreshTokenExpiresIn"]?.int64Value == min(tokenTTL, maxAge))
            families.append(Family(token: token, now: now))
            familyIDs.append(try #require(body["session"]?["id"]?.stringValue))
            userIDs[familyIDs.last!] = try #require(body["user"]?["id"]?.stringValue)
            log.append("sign-in → family \(families.count - 1)")
        }

        func moveClock() {
            let seconds = clockMoves[pick(clockMoves.count)]
            world.advanceClock(by: seconds)
            flows = try! world.inProcess()
            log.append("clock +\(seconds) → \(now - world.google.now)")
        }

        /// A refresh with any token ever issued (mostly a live or just-replaced one), compared
        /// with the model's answer.
        func refresh(garbage: Bool) {
            if garbage {
                let answer = flows.refreshAnswer("not-" + String(now))
                #expect(answer == .error("REFRESH_TOKEN_NOT_FOUND"))
                return
            }
            let family = pick(families.count)
            let count = families[family].tokens.count
            let index: Int
            switch pick(4) {
            case 0: index = pick(count)
            case 1: index = max(0, count - 2)
            default: index = count - 1
            }
            let expected = families[family].expected(index: index, now: now)
            let answer = flows.refreshAnswer(families[family].tokens[index])
            log.append("refresh family \(family) token \(index)/\(count - 1): expected \(expected), got \(answer)")
            apply(expected, answer, family: family)
        }

        func apply(_ expected: Family.Expected, _ answer: RefreshAnswer, family: Int) {
            let promise = min(now + tokenTTL, families[family].createdAt + maxAge) - now
            switch expected {
            case .rotation:
                guard case .token(let token, let expiresIn) = answer, !families[family].tokens.contains(token) else {
                    Issue.record("expected a new live token: \(log.suffix(12).joined(separator: "\n"))")
                    return
                }
                #expect(expiresIn == promise, "\(log.suffix(3))")
                families[family].rotated(to: token, now: now)
            case .liveAgain:
                #expect(answer == .token(families[family].live, expiresIn: families[family].liveExpiresAt - now),
                        "\(log.suffix(12).joined(separator: "\n"))")
            case .error(let code):
                #expect(answer == .error(code), "\(log.suffix(12).joined(separator: "\n"))")
                if code == "REFRESH_TOKEN_REUSED", answer == .error(code) { families[family].revokedAt = now }
            }
        }

        /// The grace period's edge, which random clock moves rarely land on: rotate a live token,
        /// move the clock by just under, exactly or just over AUTH_REFRESH_GRACE, and present the
        /// replaced token.
        func retryAtTheGraceEdge() throws {
            guard let family = families.indices.filter({ families[$0].alive(at: now) }).randomElement(using: &random) else { return }
            let replaced = families[family].tokens.count - 1
            apply(.rotation, flows.refreshAnswer(families[family].live), family: family)
            guard families[family].tokens.count == replaced + 2 else { return }
            let seconds = grace - 1 + Int64(pick(3))
            world.advanceClock(by: seconds)
            flows = try world.inProcess()
            let expected = families[family].expected(index: replaced, now: now)
            let answer = flows.refreshAnswer(families[family].tokens[replaced])
            log.append("rotate family \(family), clock +\(seconds), the replaced token: expected \(expected), got \(answer)")
            apply(expected, answer, family: family)
        }

        /// Two refreshes of a live token at once: one rotation, and the other answers the same
        /// live token (a grace retry, or a lost race that reads what the winner wrote).
        func concurrentRefresh() throws {
            guard let family = families.indices.filter({ families[$0].alive(at: now) }).randomElement(using: &random) else { return }
            let token = families[family].live
            let second = try world.inProcess()
            let answers = runSimultaneously(2) { [flows] index in (index == 0 ? flows : second).refreshAnswer(token) }
            log.append("two refreshes of family \(family)'s live token: \(answers)")
            let promise = min(now + tokenTTL, families[family].createdAt + maxAge) - now
            guard let fresh = answers[0].token, answers[0] == answers[1], fresh != token else {
                Issue.record("two refreshes at once answered \(answers)")
                return
            }
            #expect(answers[0] == .token(fresh, expiresIn: promise))
            families[family].rotated(to: fresh, now: now)
        }

        /// Signing out with the live token: a live family counts one; a revoked one zero, while
        /// its items are readable.
        func signOut() throws {
            let family = pick(families.count)
            let model = families[family]
            if model.revokedAt == nil, !model.alive(at: now) { return }
            let expected: String
            do {
                let body = try flows.signOut(["refreshToken": .string(model.live)])
                expected = "\(body["revokedSessions"]?.int64Value ?? -1)"
            } catch {
                expected = error.code.rawValue
            }
            let rules = model.revokedAt.map { now <= $0 + visibility ? "0" : "REFRESH_TOKEN_NOT_FOUND" } ?? "1"
            log.append("sign out family \(family): expected \(rules), got \(expected)")
            #expect(expected == rules, "\(log.suffix(12).joined(separator: "\n"))")
            if model.revokedAt == nil { families[family].revokedAt = now }
        }

        /// However often a family rotated, it stores two token items at most.
        func checkStorageBound() throws {
            for (index, familyID) in familyIDs.enumerated() {
                let items = try world.storedTokenItems(userID: userIDs[familyID]!, family: familyID)
                #expect(items.count <= 2, "family \(index) (\(families[index].tokens.count) tokens) stores \(items.count) token items")
            }
        }
    }

    @Test(arguments: [(FlowWorld.Backend.local, UInt64(25)), (.local, 2026), (.dynamoDB, 25)])
    func seededSequencesFollowTheRules(backend: FlowWorld.Backend, seed: UInt64) throws {
        let run = try Run(backend: backend, seed: seed)
        for _ in 0..<200 { try run.step() }
        try run.checkStorageBound()
        let outcomes = run.log.joined(separator: "\n")
        // The sequence really went through each rule.
        for rule in ["expected rotation", "expected liveAgain", "REFRESH_TOKEN_REUSED", "REFRESH_TOKEN_REVOKED", "REFRESH_TOKEN_EXPIRED",
                     "two refreshes", "sign out"] {
            #expect(outcomes.contains(rule), "seed \(seed) never exercised \(rule)")
        }
    }
}
