import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Contract section 13's refresh families, as issue 25's probes found them broken: one live token
/// per family, the grace period answering the live token again, reuse caught for the family's
/// whole life and before expiry, and sessions that end. In process, on both backends, with the
/// clock moved.
@Suite(.serialized) struct RefreshFamilyTests {
    static let day: Int64 = 86_400

    struct SignedIn {
        var userID: String
        var sessionID: String
        var refreshToken: String
    }

    static func signIn(_ world: FlowWorld, subject: String) throws -> SignedIn {
        let body = try world.inProcess().signIn(idToken: world.googleToken(subject: subject))
        return SignedIn(userID: try #require(body["user"]?["id"]?.stringValue), sessionID: try #require(body["session"]?["id"]?.stringValue),
                        refreshToken: try #require(body["tokens"]?["refreshToken"]?.stringValue))
    }

    static func refresh(_ world: FlowWorld, _ token: String) throws -> RefreshAnswer {
        try world.inProcess().refreshAnswer(token)
    }

    /// A thief rotates a stolen token first; the real app comes back with it an hour, a day or 29
    /// days later (the family still lives: the thief's token is valid for 30 days). Reuse, and the
    /// thief's token is dead.
    @Test(arguments: FlowWorld.Backend.allCases, [3_700, day, 29 * day])
    func theRealAppComingBackAfterTheThiefRotatedIsReuse(backend: FlowWorld.Backend, absence: Int64) throws {
        let world = try FlowWorld(backend: backend)
        let app = try Self.signIn(world, subject: "stolen")
        let thief = try #require(try Self.refresh(world, app.refreshToken).token)
        world.advanceClock(by: absence)
        #expect(try Self.refresh(world, app.refreshToken) == .error("REFRESH_TOKEN_REUSED"))
        #expect(try Self.refresh(world, thief) == .error("REFRESH_TOKEN_REVOKED"))
        #expect(try Self.refresh(world, app.refreshToken) == .error("REFRESH_TOKEN_REVOKED"), "the family stays dead")
    }

    /// 50 refreshes of one token within the grace period all answer the one live token; 21 days
    /// later that token still refreshes and every other is reuse.
    @Test(arguments: FlowWorld.Backend.allCases)
    func fiftyGraceRefreshesLeaveOneLiveToken(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let app = try Self.signIn(world, subject: "grace-storm")
        let flows = try world.inProcess()
        let live = try #require(flows.refreshAnswer(app.refreshToken).token)
        for attempt in 1...50 {
            #expect(flows.refreshAnswer(app.refreshToken).token == live, "grace refresh \(attempt)")
        }
        let items = try world.storedTokenItems(userID: app.userID, family: app.sessionID)
        #expect(items.count == 2, "the live token and the one it replaced: \(items.map { $0["SK"] })")
        #expect(items.filter { $0["status"]?.stringValue == "ACTIVE" }.count == 1)

        world.advanceClock(by: 21 * Self.day)
        let next = try #require(try Self.refresh(world, live).token, "the one live token refreshes")
        #expect(try Self.refresh(world, app.refreshToken) == .error("REFRESH_TOKEN_REUSED"))
        #expect(try Self.refresh(world, next) == .error("REFRESH_TOKEN_REVOKED"))
    }

    /// Reuse is decided before expiry: a used token presented after its own expiry, while the
    /// family lives, is reuse (never EXPIRED), and the family dies.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aUsedTokenPastItsExpiryIsStillReuse(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let app = try Self.signIn(world, subject: "expired-reuse")
        world.advanceClock(by: 10 * Self.day)
        let second = try #require(try Self.refresh(world, app.refreshToken).token)
        world.advanceClock(by: 25 * Self.day)  // the first token expired 5 days ago; the second lives 5 more
        #expect(try Self.refresh(world, app.refreshToken) == .error("REFRESH_TOKEN_REUSED"))
        #expect(try Self.refresh(world, second) == .error("REFRESH_TOKEN_REVOKED"))
    }

    /// AUTH_SESSION_MAX_AGE (default 90 days): a session refreshed every 29 days gets shorter and
    /// shorter promises, then REFRESH_TOKEN_EXPIRED once it is 90 days old, exactly.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aSessionRefreshedPastItsMaximumAgeExpires(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        var token = try Self.signIn(world, subject: "forever").refreshToken
        var age: Int64 = 0
        for _ in 0..<3 {
            world.advanceClock(by: 29 * Self.day)
            age += 29 * Self.day
            let answer = try Self.refresh(world, token)
            #expect(answer == .token(try #require(answer.token), expiresIn: min(30 * Self.day, 90 * Self.day - age)))
            token = try #require(answer.token)
        }
        world.advanceClock(by: 90 * Self.day - age - 1)
        token = try #require(try Self.refresh(world, token).token, "a second before the session's end")
        world.advanceClock(by: 1)
        #expect(try Self.refresh(world, token) == .error("REFRESH_TOKEN_EXPIRED"))
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func noSessionMaximumAgeWhenItIsZero(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(["AUTH_SESSION_MAX_AGE": "0"], backend: backend)
        var token = try Self.signIn(world, subject: "no-limit").refreshToken
        for _ in 0..<5 {
            world.advanceClock(by: 29 * Self.day)
            let answer = try Self.refresh(world, token)
            #expect(answer == .token(try #require(answer.token), expiresIn: 30 * Self.day))
            token = try #require(answer.token)
        }
    }

    /// A guest's token never promises more than the guest has left (AUTH_GUEST_TTL past its last
    /// sign-in or refresh), even with a longer AUTH_REFRESH_TOKEN_TTL.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aGuestsTokenPromisesNoMoreThanTheGuestHasLeft(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(["AUTH_GUEST": "on", "AUTH_GUEST_TTL": "3600"], backend: backend)
        let output = world.run("signin", ["provider": "guest"])
        let signedIn = try #require(output.responseBody, "\(output.stdoutText)")
        #expect(signedIn["tokens"]?["refreshTokenExpiresIn"] == 3600, "\(signedIn)")
        world.advanceClock(by: 1800)
        let answer = try Self.refresh(world, try #require(signedIn["tokens"]?["refreshToken"]?.stringValue))
        #expect(answer == .token(try #require(answer.token), expiresIn: 3600), "the guest's life moved forward with the refresh")
    }

    /// The grace period's edge: the replaced token at exactly AUTH_REFRESH_GRACE seconds is a
    /// retry; a second later it is reuse.
    @Test(arguments: FlowWorld.Backend.allCases)
    func theGracePeriodEndsExactlyAtItsLength(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let first = try Self.signIn(world, subject: "edge").refreshToken
        let live = try #require(try Self.refresh(world, first).token)
        world.advanceClock(by: 30)
        #expect(try Self.refresh(world, first).token == live)
        world.advanceClock(by: 1)
        #expect(try Self.refresh(world, first) == .error("REFRESH_TOKEN_REUSED"))
        #expect(try Self.refresh(world, live) == .error("REFRESH_TOKEN_REVOKED"))
    }

    /// Only the token the live one replaced is a retry: one generation older is reuse, even
    /// within the grace period.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aTokenTwoGenerationsOldIsReuseEvenWithinTheGracePeriod(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let first = try Self.signIn(world, subject: "generations").refreshToken
        let flows = try world.inProcess()
        let second = try #require(flows.refreshAnswer(first).token)
        let third = try #require(flows.refreshAnswer(second).token)
        #expect(flows.refreshAnswer(first) == .error("REFRESH_TOKEN_REUSED"))
        #expect(flows.refreshAnswer(third) == .error("REFRESH_TOKEN_REVOKED"))
    }

    /// A forged token naming a real family (its user and session ids are in every access token)
    /// and an old generation is unknown, and revokes nothing: the family's key tags its tokens.
    @Test func aForgedOldGenerationIsUnknownAndRevokesNothing() throws {
        let world = FlowWorld()
        let app = try Self.signIn(world, subject: "forged")
        let live = try #require(try Self.refresh(world, app.refreshToken).token)
        world.advanceClock(by: 3600)
        var bytes = try #require(Base64.urlDecoded(app.refreshToken))
        bytes[bytes.count - 20] ^= 0x01  // the secret, under the tag
        let before = world.storeSnapshot()
        #expect(try Self.refresh(world, Base64.urlEncoded(bytes)) == .error("REFRESH_TOKEN_NOT_FOUND"))
        #expect(world.storeSnapshot() == before)
        #expect(try Self.refresh(world, live).token != nil)
    }

    /// A real token bent in each part it carries: unknown, and nothing written (old generations
    /// included: the tag is what tells them from a forgery).
    @Test(arguments: ["next generation", "generation 0", "older generation", "another family", "tag cut short", "tag flipped"])
    func aBentTokenIsUnknownAndChangesNothing(_ bend: String) throws {
        let world = FlowWorld()
        let app = try Self.signIn(world, subject: "bent")
        let other = try Self.signIn(world, subject: "bent")
        var live = try #require(try Self.refresh(world, app.refreshToken).token)
        live = try #require(try Self.refresh(world, live).token)
        var bytes = try #require(Base64.urlDecoded(live))
        let generationAt = 2 + app.userID.utf8.count + 1 + app.sessionID.utf8.count
        switch bend {
        case "next generation": bytes[generationAt + 3] += 1
        case "generation 0": bytes.replaceSubrange(generationAt..<generationAt + 4, with: [0, 0, 0, 0])
        case "older generation": bytes[generationAt + 3] -= 2
        case "another family": bytes.replaceSubrange(generationAt - app.sessionID.utf8.count..<generationAt, with: Array(other.sessionID.utf8))
        case "tag cut short": bytes.removeLast()
        default: bytes[bytes.count - 1] ^= 0x80
        }
        let before = world.storeSnapshot()
        #expect(try Self.refresh(world, Base64.urlEncoded(bytes)) == .error("REFRESH_TOKEN_NOT_FOUND"))
        #expect(world.storeSnapshot() == before)
        #expect(try Self.refresh(world, live).token != nil, "the family is untouched")
    }

    // MARK: - Families written by the release before

    /// A signed-in session turned back into what the earlier release wrote.
    static func earlierFamily(_ world: FlowWorld, subject: String) throws -> EarlierReleaseFamily {
        let signedIn = try signIn(world, subject: subject)
        return try EarlierReleaseFamily(rewriting: world.table(), userID: signedIn.userID, sessionID: signedIn.sessionID)
    }

    /// A format-1 token of that family issued ten minutes ago (`used`: and rotated five minutes ago).
    static func earlierToken(_ family: EarlierReleaseFamily, _ tokenID: String, fill: UInt8, world: FlowWorld, used: Bool = false) throws -> String {
        try family.addToken(tokenID, secret: [UInt8](repeating: fill, count: 32), createdAt: world.now - 600,
                            expiresAt: world.now + 29 * day, usedAt: used ? world.now - 300 : nil)
    }

    /// An earlier release's family (format-1 tokens, no generations) keeps working: its ACTIVE
    /// token refreshes once into the new format, the old token is then the replaced one (a
    /// retry within the grace period, reuse after it, however late), and a second ACTIVE token
    /// the earlier grace period forked is revoked with the family.
    @Test(arguments: FlowWorld.Backend.allCases)
    func anEarlierReleasesFamilyGetsTheNewRulesAtItsNextRefresh(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let family = try Self.earlierFamily(world, subject: "upgraded")
        let active = try Self.earlierToken(family, "earlier1", fill: 1, world: world)
        let fork = try Self.earlierToken(family, "earlier2", fill: 2, world: world)

        let migrated = try #require(try Self.refresh(world, active).token, "the earlier release's token refreshes")
        #expect(Base64.urlDecoded(migrated)?.first == 2)
        #expect(try Self.refresh(world, active).token == migrated, "a retry within the grace period")
        world.advanceClock(by: 10 * Self.day)
        let next = try #require(try Self.refresh(world, migrated).token)
        #expect(try Self.refresh(world, active) == .error("REFRESH_TOKEN_REUSED"), "ten days later, its item kept for that")
        #expect(try Self.refresh(world, next) == .error("REFRESH_TOKEN_REVOKED"))
        #expect(try Self.refresh(world, fork) == .error("REFRESH_TOKEN_REVOKED"))
    }

    /// Once one of the earlier release's forked ACTIVE tokens moved the family on, another is reuse.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aForkTheEarlierGracePeriodLeftIsReuseOnceTheFamilyMoved(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let family = try Self.earlierFamily(world, subject: "forked")
        let used = try Self.earlierToken(family, "earlier0", fill: 7, world: world, used: true)
        let one = try Self.earlierToken(family, "earlier1", fill: 1, world: world)
        let other = try Self.earlierToken(family, "earlier2", fill: 2, world: world)
        let migrated = try #require(try Self.refresh(world, one).token)
        #expect(try Self.refresh(world, other) == .error("REFRESH_TOKEN_REUSED"))
        #expect(try Self.refresh(world, migrated) == .error("REFRESH_TOKEN_REVOKED"))
        #expect(try Self.refresh(world, used) == .error("REFRESH_TOKEN_REVOKED"))
    }

    /// The earlier release's USED token past the grace period: reuse, as before.
    @Test(arguments: FlowWorld.Backend.allCases)
    func anEarlierReleasesUsedTokenPastItsGracePeriodIsReuse(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let family = try Self.earlierFamily(world, subject: "earlier-used")
        let used = try Self.earlierToken(family, "earlier0", fill: 7, world: world, used: true)
        let active = try Self.earlierToken(family, "earlier1", fill: 1, world: world)
        #expect(try Self.refresh(world, used) == .error("REFRESH_TOKEN_REUSED"))
        #expect(try Self.refresh(world, active) == .error("REFRESH_TOKEN_REVOKED"))
    }
}
