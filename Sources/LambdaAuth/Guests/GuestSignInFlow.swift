import Logging

/// `signin` with provider `guest` (contract section 9): a user with no identity, its first
/// session and tokens, in one transaction. Creation is limited per source IP before anything is
/// written (an HTTP event without a usable source IP is refused); direct invocations are not limited.
///
/// Every item of a guest carries a `ttl` no later than its PROFILE's (`guestExpiresAt`, moved
/// forward by each refresh), so the profile is the last item of a guest to vanish and nothing of it
/// is left pointing at a missing user.
struct GuestSignInFlow: Sendable {
    let tokens: any TokenIssuing
    let store: AccountStore
    let clock: any WallClock
    let random: any RandomSource
    let limiter: any RateLimiting
    let enabled: Bool
    let perSourceIP: RateLimit

    /// `hooks`: a guest is a new user, so `beforeUserCreated` and its token's `accessTokenClaims`
    /// are asked before anything is written, the rate limit's count included: a guest the hooks
    /// refuse leaves the store exactly as it was.
    func signIn(device: [String: String], origin: RequestOrigin, hooks: SignInHooks, logger: Logger) throws(AuthError) -> SignInResult {
        guard enabled else {
            throw AuthError(.providerNotConfigured, "guest sign-in is off (AUTH_GUEST)")
        }
        var hooks = hooks
        try hooks.beforeUserCreated(logger: logger)
        let userID = newIdentifier(random)
        let sessionID = newIdentifier(random)
        let family = RefreshFamilyKey.generate(familyID: sessionID, random: random)
        let refresh = RefreshTokenCredential(userID: userID, family: family, random: random)
        let now = clock.nowSeconds
        let expiresAt = now + store.guestTTL
        var profile = UserProfile(userID: userID, email: nil, emailVerified: false, displayName: nil, pictureURL: nil, now: now)
        profile.identityCount = 0
        profile.isGuest = true
        profile.guestExpiresAt = expiresAt
        profile.activeSessions[sessionID] = SessionActivity.next(after: [], clock: clock)
        profile.version = 1
        let user = UserView(profile: profile, identities: [])
        var claimsHook = hooks.accessTokenClaims(user: user.json, sessionID: sessionID)
        try claimsHook.askBeforeWrite(user: user.json, logger: logger)
        if let sourceKey = try origin.rateLimitKey() {
            do {
                try limiter.consume(.guestSignInPerIP, key: sourceKey, limit: perSourceIP, now: clock.nowSeconds)
            } catch where error.code == .rateLimited {
                logger.warning("guest sign-in refused: rate limit", metadata: ["sourceIp": .string(sourceKey)])
                throw error
            }
        }
        var issued = try tokens.issueTokens(userID: userID, sessionID: sessionID, refresh: refresh, anonymous: true, appMetadata: [:],
                                            assurance: .guest, claimsHook: claimsHook, logger: logger)
        var session = SessionRecord(userID: userID, sessionID: sessionID, device: device, family: family, now: now)
        session.guestExpiresAt = expiresAt
        session.assurance = .guest
        let token = store.newRefreshToken(refresh, family: family, sessionCreatedAt: now, user: UserSnapshot(user), assurance: .guest, now: now)
        issued.refreshTokenLifetime = token.expiresAt - now
        try store.createGuest(user, session: session, refreshToken: token)
        logger.info("created a guest", metadata: ["userId": .string(userID), "sessionId": .string(sessionID)])
        return SignInResult(user: user, isNewUser: true, session: session, tokens: issued)
    }
}

extension AccountStore {
    /// The guest's profile, first session and refresh token: one transaction (new random ids, so
    /// a condition can only fail on an id collision, which is a bug worth hearing about).
    func createGuest(_ user: UserView, session: SessionRecord, refreshToken: RefreshTokenRecord) throws(AuthError) {
        let actions: [TransactWriteAction] = [
            .put(user.profile.item, condition: "attribute_not_exists(PK)"),
            .put(session.item(liveTokenExpiresAt: refreshToken.expiresAt), condition: "attribute_not_exists(PK)"),
            .put(refreshToken.item),
        ]
        if let reasons = try table.transact(actions) {
            throw .internalError("guest creation cancelled: \(reasons.map(\.code))")
        }
    }

    /// After an upgrade the sessions and refresh tokens the guest had keep going as a full user's:
    /// their `ttl` goes back to what a full user's would be. Best effort, item by item, each
    /// conditional on the item still being ACTIVE: one that vanished, was revoked or was rotated
    /// meanwhile keeps what that write gave it, and the next refresh of a session writes its
    /// full-user expiry anyway.
    func dropGuestExpiry(of userID: String, now: Int64) {
        guard let sessions = try? self.sessions(of: userID), let tokens = try? refreshTokens(of: userID) else { return }
        var updates: [(TableKey, Int64)] = []
        // A session lives as long as its live token can refresh (a family of an earlier release:
        // a full user's inactivity limit, within AUTH_SESSION_MAX_AGE).
        var liveTokenExpiry: [String: Int64] = [:]
        for token in tokens where token.status == .active { liveTokenExpiry[token.familyID] = max(liveTokenExpiry[token.familyID] ?? 0, token.expiresAt) }
        for session in sessions where session.status == .active {
            let fallback = min(max(session.lastActiveAt, now) + refreshTokenTTL, sessionEnd(createdAt: session.createdAt) ?? .max)
            updates.append((Keys.session(userID, session.sessionID), liveTokenExpiry[session.sessionID] ?? fallback))
        }
        for token in tokens where token.status == .active {
            updates.append((token.key, token.expiresAt + RefreshTokenRecord.expiredVisibility))
        }
        for (key, ttl) in updates {
            _ = try? table.updateItem(
                key, update: "SET #ttl = :ttl", condition: "#status = :active",
                attributes: ExpressionAttributes(names: ["#ttl": "ttl", "#status": "status"],
                                                 values: [":ttl": .n(ttl), ":active": .s(SessionStatus.active.rawValue)]),
                returnValues: .none)
        }
    }
}
