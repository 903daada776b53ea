import Logging

struct RefreshResult {
    /// The user as the token's copy shows it (exact: the rotation checked its version).
    var user: JSONValue
    var sessionID: String
    var sessionCreatedAt: Int64
    var tokens: IssuedTokens
}

/// `refresh`: rotate a refresh token within its family (= its session), which has exactly one
/// live token at any time (contract section 13).
///
/// - The live token rotates: two requests, one strongly consistent GetItem of its item (the token
///   carries its key) and the rotation transaction (`AccountStore.rotate`).
/// - The token the live one replaced, presented again within AUTH_REFRESH_GRACE, gets the same
///   live token back (its secret derives from the presented one and the nonce kept on the used
///   item): a retried or concurrent refresh is idempotent and forks nothing. Three requests: the
///   used item, the live item, a transaction of checks (`AccountStore.confirmGraceRetry`).
/// - Any other token of the family, at any time while the family lives, expired or not, is reuse:
///   the family is revoked. Reuse is decided before expiry, and for tokens whose item is gone by
///   the family and generation the token carries against the session's live generation.
/// - No refresh succeeds once the session is AUTH_SESSION_MAX_AGE old.
///
/// The access token and credentials are minted once, after the write commits.
struct RefreshFlow: Sendable {
    let tokens: any TokenIssuing
    let store: AccountStore
    let clock: any WallClock
    let random: any RandomSource
    let retry: OptimisticRetry
    let refreshGrace: Int64
    /// The app's hooks: `accessTokenClaims` is asked for every token a refresh issues, a grace
    /// replay's included, before the refresh writes (contract section 19).
    var hooks: Hooks = .none

    /// What a refresh hands out once its write committed.
    private struct Grant {
        var credential: RefreshTokenCredential
        var record: RefreshTokenRecord
        var user: UserSnapshot
    }

    func refresh(_ presented: String, hookRequest: HookRequest = HookRequest(), logger: Logger) throws(AuthError) -> RefreshResult {
        let found = try store.findRefreshToken(presented: presented)
        do {
            return try refresh(found, hookRequest: hookRequest, logger: logger)
        } catch {
            // Reuse, a revoked or an expired token: the event line says whose (contract section 18).
            throw error.about(userID: found.owner.userID, sessionID: found.owner.sessionID)
        }
    }

    private func refresh(_ found: AccountStore.FoundRefreshToken, hookRequest: HookRequest, logger: Logger) throws(AuthError) -> RefreshResult {
        guard case .item(let first, let secret) = found else {
            if case .retired(let credential, let session) = found { throw try retired(credential, session: session, logger: logger) }
            throw AuthError(.refreshTokenNotFound, "the refresh token is not known")
        }
        var record = first
        var copy = record.user
        // The session's start does not change; tokens written before they carried it read it once.
        let sessionCreatedAt = try sessionCreationTime(record)
        let nonce = random.bytes(32)
        // A refresh proves no identity: the hook is told the user and the session only.
        var claimsHook = AccessTokenClaimsCall(hooks: hooks, request: hookRequest, payload: HookPayload(
            type: .accessTokenClaims, provider: nil, identity: nil, user: nil, sessionID: record.familyID))
        let grant = try retry.run("refresh") { () throws(AuthError) -> Grant? in
            let now = clock.nowSeconds
            if record.status == .revoked {
                throw AuthError(.refreshTokenRevoked, "the refresh token was revoked")
            }
            // Reuse before expiry: a used token says so however old it is.
            if record.status == .used {
                return try graceRetry(of: record, secret: secret, now: now, claimsHook: &claimsHook, logger: logger)
            }
            try checkUnexpired(record, sessionCreatedAt: sessionCreatedAt, now: now)
            if copy == nil { copy = try currentUser(of: record) }
            guard let snapshot = copy else { throw revoked(record, now: now, logger: logger) }
            let family = record.familyKey ?? RefreshFamilyKey.generate(familyID: record.familyID, random: random)
            // A token of an earlier release's family is generation 0: its successor starts the count.
            let credential = RefreshTokenCredential(succeeding: secret, generation: (record.generation ?? 0) + 1, userID: record.userID,
                                                    family: family, nonce: nonce)
            let next = store.newRefreshToken(credential, family: family, familyBorn: record.familyBorn, sessionCreatedAt: sessionCreatedAt,
                                             user: snapshot, assurance: record.assurance, now: now)
            try claimsHook.askBeforeWrite(user: snapshot.json, logger: logger)
            switch try store.rotate(record, to: next, successorNonce: nonce, refreshGrace: refreshGrace,
                                    userVersion: snapshot.profileVersion, now: now, activeAtMilliseconds: clock.nowMilliseconds) {
            case .rotated:
                logger.info("refreshed", metadata: ["userId": .string(record.userID), "sessionId": .string(record.familyID),
                                                    "generation": .number(next.generation ?? 0)])
                return Grant(credential: credential, record: next, user: snapshot)
            case .sessionChanged:
                // Revoked, or an earlier release's family that another of its tokens moved to
                // generations first: this one is no longer live.
                guard let session = try store.session(userID: record.userID, sessionID: record.familyID), session.status == .active else {
                    throw revoked(record, now: now, logger: logger)
                }
                throw try reuse(of: record.userID, family: record.familyID, now: now, logger: logger)
            case .lostRace(let userChanged, let tokenRotated):
                // The user changed since this token was issued, or the session left the profile:
                // the fresh read decides (nil: signed out).
                if userChanged { copy = nil }
                if tokenRotated {
                    // Another refresh rotated it first: what it wrote decides (a grace retry).
                    guard let current = try store.refreshToken(at: record.key) else {
                        throw AuthError(.refreshTokenNotFound, "the refresh token is not known")
                    }
                    record = current
                }
                return nil
            }
        }
        var issued = try tokens.issueTokens(userID: grant.record.userID, sessionID: grant.record.familyID, refresh: grant.credential,
                                            anonymous: grant.user.isGuest, appMetadata: grant.user.appMetadata,
                                            assurance: grant.record.assurance, claimsHook: claimsHook, logger: logger)
        issued.refreshTokenLifetime = max(0, grant.record.expiresAt - clock.nowSeconds)
        return RefreshResult(user: grant.user.json, sessionID: grant.record.familyID, sessionCreatedAt: sessionCreatedAt, tokens: issued)
    }

    func checkUnexpired(_ record: RefreshTokenRecord, sessionCreatedAt: Int64, now: Int64) throws(AuthError) {
        if let end = store.sessionEnd(createdAt: sessionCreatedAt), end <= now {
            throw AuthError(.refreshTokenExpired, "the session reached its maximum age at \(ISO8601.format(epochSeconds: end)); sign in again")
        }
        if record.expiresAt <= now {
            throw AuthError(.refreshTokenExpired, "the refresh token expired at \(ISO8601.format(epochSeconds: record.expiresAt))")
        }
    }

    /// A USED token: within the grace period and the predecessor of the live token, the live token
    /// again (nil: the user changed, read it and try again); anything else is reuse.
    private func graceRetry(of used: RefreshTokenRecord, secret: [UInt8], now: Int64, claimsHook: inout AccessTokenClaimsCall,
                            logger: Logger) throws(AuthError) -> Grant? {
        guard now - (used.usedAt ?? 0) <= refreshGrace, let nonce = used.successorNonce, let successorSK = used.replacedBy,
              successorSK.hasPrefix(Keys.refreshTokenPrefix) else {
            // Past the grace period, or used by an earlier release (whose successor cannot be
            // derived again): handing out a second live token would fork the family.
            throw try reuse(of: used.userID, family: used.familyID, now: now, logger: logger)
        }
        guard let live = try store.refreshToken(at: TableKey(pk: Keys.user(used.userID), sk: successorSK)),
              let family = live.familyKey, let generation = live.generation else {
            throw revoked(used, now: now, logger: logger)
        }
        switch live.status {
        case .revoked: throw AuthError(.refreshTokenRevoked, "the refresh token was revoked")
        case .used: throw try reuse(of: used.userID, family: used.familyID, now: now, logger: logger)
        case .active: break
        }
        let sessionCreatedAt = live.sessionCreatedAt ?? used.sessionCreatedAt ?? live.createdAt
        try checkUnexpired(live, sessionCreatedAt: sessionCreatedAt, now: now)
        let credential = RefreshTokenCredential(succeeding: secret, generation: generation, userID: live.userID, family: family, nonce: nonce)
        guard let expected = live.secretHash, constantTimeEqual(expected.utf8, credential.secretHash.utf8) else {
            throw .internalError("a grace retry derived a token that is not the live one")
        }
        var snapshot = live.user
        for _ in 0..<2 {
            if snapshot == nil { snapshot = try currentUser(of: live) }
            guard let user = snapshot else { throw revoked(used, now: now, logger: logger) }
            try claimsHook.askBeforeWrite(user: user.json, logger: logger)
            switch try store.confirmGraceRetry(successor: live, userVersion: user.profileVersion, now: now) {
            case .confirmed:
                logger.info("refreshed within the grace period: the live token again",
                            metadata: ["userId": .string(used.userID), "sessionId": .string(used.familyID), "generation": .number(generation)])
                return Grant(credential: credential, record: live, user: user)
            case .successorRotated: throw try reuse(of: used.userID, family: used.familyID, now: now, logger: logger)
            case .sessionRevoked: throw revoked(used, now: now, logger: logger)
            case .userChanged: snapshot = nil
            }
        }
        return nil
    }

    /// A token of the current format whose item is gone: an older generation is reuse for as long
    /// as the family lives; the live generation's item is gone only once swept past its expiry.
    private func retired(_ credential: RefreshTokenCredential, session: SessionRecord, logger: Logger) throws(AuthError) -> AuthError {
        let now = clock.nowSeconds
        if session.status == .revoked { return AuthError(.refreshTokenRevoked, "the refresh token was revoked") }
        guard let live = session.liveGeneration, credential.generation <= live else {
            return AuthError(.refreshTokenNotFound, "the refresh token is not known")
        }
        if credential.generation < live { return try reuse(of: credential.userID, family: credential.familyID, now: now, logger: logger) }
        return AuthError(.refreshTokenExpired, "the refresh token expired")
    }

    /// The user as the profile shows it now, or nil when the token's session is no longer one of
    /// its active sessions (or the user is gone).
    func currentUser(of record: RefreshTokenRecord) throws(AuthError) -> UserSnapshot? {
        guard let user = try store.user(record.userID), user.profile.admits(session: record.familyID) else { return nil }
        return UserSnapshot(user)
    }

    func sessionCreationTime(_ record: RefreshTokenRecord) throws(AuthError) -> Int64 {
        if let stored = record.sessionCreatedAt { return stored }
        return try store.sessionCreatedAt(userID: record.userID, sessionID: record.familyID) ?? record.createdAt
    }

    /// The session is gone or revoked: the token is dead too.
    func revoked(_ record: RefreshTokenRecord, now: Int64, logger: Logger) -> AuthError {
        store.markRevoked(record, now: now)
        logger.info("refresh refused: session revoked", metadata: ["userId": .string(record.userID), "sessionId": .string(record.familyID)])
        return AuthError(.refreshTokenRevoked, "the refresh token was revoked")
    }

    /// A token of the family that is no longer live: it leaked or a client misbehaves. Revoke the
    /// session and every token of the family.
    func reuse(of userID: String, family familyID: String, now: Int64, logger: Logger) throws(AuthError) -> AuthError {
        logger.warning("refresh token reuse detected: revoking the session and its token family",
                       metadata: ["userId": .string(userID), "sessionId": .string(familyID)])
        try store.revokeSession(userID: userID, sessionID: familyID, now: now, reason: .reuse)
        return AuthError(.refreshTokenReused, "the refresh token was already used; the session was signed out")
    }
}
