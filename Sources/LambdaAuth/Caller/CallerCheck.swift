import Logging

/// A request's caller (contract, second round): our access token, valid (signature by a key still
/// in the key set, `exp`, `iss`, `aud`), whose session is still one of its user's active sessions; and that user as one Query
/// read it, for the flow to decide on. A token that is not valid is ACCESS_TOKEN_INVALID; a valid
/// one whose session or user has ended, ACCESS_TOKEN_REVOKED.
struct Caller: Sendable {
    var claims: AccessTokenClaims
    var user: UserView
    var userID: String { claims.userID }
    var sessionID: String { claims.sessionID }

    /// Runs what a handler does for this caller: a refusal past the caller check names the caller
    /// on the request's event line (a refused link, a session of another user).
    func attributing<T>(_ work: () throws -> T) throws -> T {
        do {
            return try work()
        } catch let error as AuthError {
            throw error.about(userID: userID, sessionID: sessionID)
        }
    }
}

/// The one caller check of every handler that takes an access token. The session check reads the
/// profile's `activeSessions` rather than the SESSION# item: the same Query gives the flow its
/// user, and the flow's write re-checks the session in its condition, atomically.
struct CallerCheck: Sendable {
    let tokens: any TokenIssuing
    let store: AccountStore

    /// `allowingPendingDeletion`: only `delete-account`, which finishes a deletion an earlier
    /// request of the caller began; for every other handler such an account is gone.
    func check(_ accessToken: String, allowingPendingDeletion: Bool = false, logger: Logger) throws(AuthError) -> Caller {
        let claims = try tokens.verifyAccessToken(accessToken, logger: logger)
        return Caller(claims: claims, user: try currentUser(of: claims, allowingPendingDeletion: allowingPendingDeletion))
    }

    /// The caller's user read again (after a lost race), provided its session is still active.
    func currentUser(of claims: AccessTokenClaims, allowingPendingDeletion: Bool = false) throws(AuthError) -> UserView {
        // A valid token of an ended session or account is ACCESS_TOKEN_REVOKED, as the verifier
        // library and the authorizer say it: the app knows to sign in again rather than to retry.
        guard let user = try store.user(claims.userID), allowingPendingDeletion || user.profile.deletionRequestedAt == nil else {
            throw AuthError(.accessTokenRevoked, "the access token's user no longer exists")
        }
        guard user.profile.activeSessions[claims.sessionID] != nil else {
            throw AuthError(.accessTokenRevoked, "the access token's session was signed out")
        }
        return user
    }
}

extension CallerCheck {
    /// An optimistic loop on the caller's user: the first attempt decides on the user the caller
    /// check read; after a lost race the user is read again, and the caller checked again (its
    /// session may have been signed out meanwhile).
    func retrying<Result>(_ operation: String, for caller: Caller, with retry: OptimisticRetry, allowingPendingDeletion: Bool = false,
                          _ attempt: (UserView) throws(AuthError) -> Result?) throws(AuthError) -> Result {
        var firstRead: UserView? = caller.user
        return try retry.run(operation) { () throws(AuthError) -> Result? in
            let user: UserView
            if let read = firstRead {
                user = read
                firstRead = nil
            } else {
                user = try currentUser(of: caller.claims, allowingPendingDeletion: allowingPendingDeletion)
            }
            return try attempt(user)
        }
    }
}
