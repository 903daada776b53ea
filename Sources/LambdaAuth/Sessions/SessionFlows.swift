import Logging

enum SignOutScope: String, Sendable {
    /// The caller's session.
    case session
    /// Every other session of the user.
    case others
    /// Every session of the user, the caller's included.
    case global
}

/// `signout`: revokes the sessions a scope names, with their refresh-token families. The caller
/// is identified by an access token or by a refresh token alone (an app whose access token
/// expired can still sign out). Signing out a session that is already gone answers 0.
struct SignOutFlow: Sendable {
    let tokens: any TokenIssuing
    let store: AccountStore
    let clock: any WallClock
    let retry: OptimisticRetry

    /// What a sign-out did, and for whom: the caller's user and session, which its event line names.
    struct Outcome: Sendable {
        var revokedSessions: Int
        var userID: String
        var sessionID: String
    }

    func signOut(accessToken: String, scope: SignOutScope, logger: Logger) throws(AuthError) -> Outcome {
        let claims = try tokens.verifyAccessToken(accessToken, logger: logger)
        return try signOut(userID: claims.userID, sessionID: claims.sessionID, scope: scope, logger: logger,
                           inactive: AuthError(.accessTokenRevoked, "the access token's session was signed out"))
    }

    func signOut(refreshToken: String, scope: SignOutScope, logger: Logger) throws(AuthError) -> Outcome {
        let record = try store.refreshToken(presented: refreshToken)
        if scope != .session {
            // Acting on other sessions needs a token that could still refresh.
            if record.status == .revoked {
                throw AuthError(.refreshTokenRevoked, "the refresh token was revoked").about(userID: record.userID, sessionID: record.familyID)
            }
            if record.expiresAt <= clock.nowSeconds {
                throw AuthError(.refreshTokenExpired, "the refresh token expired").about(userID: record.userID, sessionID: record.familyID)
            }
        }
        return try signOut(userID: record.userID, sessionID: record.familyID, scope: scope, logger: logger,
                           inactive: AuthError(.refreshTokenRevoked, "the refresh token was revoked"))
    }

    private func signOut(userID: String, sessionID: String, scope: SignOutScope, logger: Logger, inactive: AuthError) throws(AuthError) -> Outcome {
        do {
            let revoked = try revokeSessions(userID: userID, sessionID: sessionID, scope: scope, logger: logger, inactive: inactive)
            return Outcome(revokedSessions: revoked, userID: userID, sessionID: sessionID)
        } catch {
            throw error.about(userID: userID, sessionID: sessionID)
        }
    }

    private func revokeSessions(userID: String, sessionID: String, scope: SignOutScope, logger: Logger, inactive: AuthError) throws(AuthError) -> Int {
        try retry.run("sign-out") { () throws(AuthError) -> Int? in
            guard let user = try store.user(userID), user.profile.admits(session: sessionID) else {
                if scope == .session { return 0 }
                throw inactive
            }
            let targets: [String]
            switch scope {
            case .session: targets = [sessionID]
            case .others: targets = user.profile.activeSessions.keys.filter { $0 != sessionID }.sorted()
            case .global: targets = user.profile.activeSessions.keys.sorted()
            }
            guard !targets.isEmpty else { return 0 }
            let now = clock.nowSeconds
            // The profile still lists sessions that ended on their own (inactive past their last
            // token's expiry, or AUTH_SESSION_MAX_AGE old: their item's `ttl` passed): they leave
            // it too, but only sessions that were still live count as signed out.
            let live = try store.liveSessionIDs(of: userID)
            guard try store.revokeSessions(userID: userID, targets, gate: AccountStore.activeSessionsGate(user, removing: targets),
                                           now: now, reason: .signout) else { return nil }
            let revoked = targets.filter(live.contains).count
            logger.info("signed out", metadata: ["userId": .string(userID), "sessionId": .string(sessionID), "scope": .string(scope.rawValue),
                                       "revokedSessions": .number(Int64(revoked))])
            return revoked
        }
    }
}

/// One of a user's active sessions, as `sessions` lists it.
struct SessionSummary: Sendable {
    var session: SessionRecord
    /// Epoch milliseconds (`SessionActivity`).
    var lastActiveAtMilliseconds: Int64
    var current: Bool
}

/// `sessions`: the caller's user's active sessions, and revoking one of them.
struct SessionsFlow: Sendable {
    let callerCheck: CallerCheck
    let store: AccountStore
    let clock: any WallClock
    let retry: OptimisticRetry

    func authenticate(_ accessToken: String, logger: Logger) throws(AuthError) -> Caller {
        try callerCheck.check(accessToken, logger: logger)
    }

    /// Most recently active first.
    func list(for caller: Caller) throws(AuthError) -> [SessionSummary] {
        let active = caller.user.profile.activeSessions
        return try store.sessions(of: caller.userID)
            .filter { $0.status == .active && active[$0.sessionID] != nil }
            .map { SessionSummary(session: $0, lastActiveAtMilliseconds: max($0.lastActiveAt * 1000, active[$0.sessionID] ?? 0),
                                  current: $0.sessionID == caller.sessionID) }
            .sorted { ($0.lastActiveAtMilliseconds, $1.session.sessionID) > ($1.lastActiveAtMilliseconds, $0.session.sessionID) }
    }

    /// An id that is not one of the caller's active sessions is SESSION_NOT_FOUND, whoever's it is.
    func revoke(_ sessionID: String, for caller: Caller, logger: Logger) throws(AuthError) -> Int {
        try callerCheck.retrying("session revocation", for: caller, with: retry) { (user: UserView) throws(AuthError) -> Int? in
            guard user.profile.activeSessions[sessionID] != nil else {
                throw AuthError(.sessionNotFound, "no such session")
            }
            guard try store.revokeSessions(userID: caller.userID, [sessionID], gate: AccountStore.activeSessionsGate(user, removing: [sessionID]),
                                           now: clock.nowSeconds, reason: .revoked) else { return nil }
            logger.info("session revoked", metadata: ["userId": .string(caller.userID), "sessionId": .string(sessionID)])
            return 1
        }
    }
}
