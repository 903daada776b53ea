import Logging

struct RefreshResult {
    /// The user as the token's copy shows it (exact: the rotation checked its version).
    var user: JSONValue
    var sessionID: String
    var sessionCreatedAt: Int64
    var tokens: IssuedTokens
}

/// `refresh`: rotate a refresh token within its family (= its session).
///
/// Two requests in the common case: one strongly consistent GetItem of the token's item (the
/// token carries its key) and the rotation transaction (`AccountStore.rotate`). A USED token
/// presented again within the grace period gets a fresh token of the same family (concurrent
/// refreshes from one device all succeed); after it, the whole family is revoked. The access
/// token and credentials are minted once, after the rotation commits.
struct RefreshFlow: Sendable {
    let tokens: any TokenIssuing
    let store: AccountStore
    let clock: any WallClock
    let random: any RandomSource
    let retry: OptimisticRetry
    let refreshGrace: Int64

    func refresh(_ presented: String, logger: Logger) throws(AuthError) -> RefreshResult {
        var record = try store.refreshToken(presented: presented)
        var copy = record.user
        // The session's start does not change; tokens written before they carried it read it once.
        let sessionCreatedAt = try sessionCreationTime(record)
        let refresh = RefreshTokenCredential(userID: record.userID, random: random)
        let user = try retry.run("refresh") { () throws(AuthError) -> UserSnapshot? in
            let now = clock.nowSeconds
            if record.status == .revoked {
                throw AuthError(.refreshTokenRevoked, "the refresh token was revoked")
            }
            if record.expiresAt <= now {
                throw AuthError(.refreshTokenExpired, "the refresh token expired at \(ISO8601.format(epochSeconds: record.expiresAt))")
            }
            if record.status == .used, now - (record.usedAt ?? 0) > refreshGrace {
                try revokeFamily(of: record, now: now, logger: logger)
                throw AuthError(.refreshTokenReused, "the refresh token was already used; the session was signed out")
            }
            if copy == nil { copy = try currentUser(of: record) }
            guard let snapshot = copy else { throw revoked(record, now: now, logger: logger) }
            var next = store.newRefreshToken(refresh, sessionID: record.familyID, sessionCreatedAt: sessionCreatedAt, user: snapshot, now: now)
            // A guest lives AUTH_GUEST_TTL past its last refresh: this one moves every expiry forward.
            next.guestExpiresAt = snapshot.isGuest ? now + store.guestTTL : nil
            switch try store.rotate(record, to: next, userVersion: snapshot.profileVersion, now: now,
                                    activeAtMilliseconds: clock.nowMilliseconds) {
            case .rotated:
                logger.info("refreshed", metadata: ["userId": .string(record.userID), "sessionId": .string(record.familyID),
                                          "grace": .bool(record.status == .used)])
                return snapshot
            case .sessionRevoked:
                throw revoked(record, now: now, logger: logger)
            case .lostRace(let userChanged, let tokenRotated):
                // The user changed since this token was issued, or the session left the profile:
                // the fresh read decides (nil: signed out).
                if userChanged { copy = nil }
                if tokenRotated {
                    // Another refresh rotated it first: apply the USED rule to what it wrote.
                    guard let current = try store.refreshToken(at: record.key) else {
                        throw AuthError(.refreshTokenNotFound, "the refresh token is not known")
                    }
                    record = current
                }
                return nil
            }
        }
        let issued = try tokens.issueTokens(userID: record.userID, sessionID: record.familyID, refresh: refresh,
                                            anonymous: user.isGuest, logger: logger)
        return RefreshResult(user: user.json, sessionID: record.familyID, sessionCreatedAt: sessionCreatedAt, tokens: issued)
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

    /// Reuse after the grace period: the token leaked or a client misbehaves. Revoke every token of
    /// the family and the session.
    func revokeFamily(of record: RefreshTokenRecord, now: Int64, logger: Logger) throws(AuthError) {
        logger.warning("refresh token reuse detected: revoking the session and its token family",
                       metadata: ["userId": .string(record.userID), "sessionId": .string(record.familyID)])
        try store.revokeSession(userID: record.userID, sessionID: record.familyID, now: now)
    }
}
