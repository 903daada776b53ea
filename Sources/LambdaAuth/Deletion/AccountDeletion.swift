import Logging

/// Deletes every item of a user, in an order that survives a crash at any instant.
///
/// A user can own more items than one transaction holds (100), so the deletion cannot be one
/// transaction. Instead: (1) the profile is marked (`deletionRequestedAt`, one conditional
/// write): from then on every flow treats the account as gone; (2) sessions, refresh tokens and
/// every other item of the user's partition are deleted, 100 per transaction, and so are the
/// items keyed by the user's addresses (one-time codes, code counters); (3) one last
/// transaction deletes the profile with both sides of every link and the email claims. A crash
/// before (3) leaves a marked profile whose links still point at it, so the next delete-account
/// or the next sign-in with one of its identities meets the mark and runs `finish` again (every
/// step is idempotent); a crash never leaves a link or email claim pointing at a missing user.
/// (4) the table erases what was deleted from its storage (the local store's log and files),
/// before the request answers.
struct AccountDeletion: Sendable {
    let store: AccountStore
    let retry: OptimisticRetry

    /// Steps (2) and (3) for a user whose profile is marked, or whose profile is already gone
    /// (then only leftovers of its partition remain, which no link points at).
    func finish(userID: String, logger: Logger) throws(AuthError) {
        try deleteEveryItem(of: userID, logger: logger)
        do {
            try store.table.eraseDeletedItems()
        } catch {
            // Deleted for every reader already; the next erasure (this deletion's retry) takes it
            // out of the files.
            throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "erasing the deleted account's items: \(error)")
        }
    }

    private func deleteEveryItem(of userID: String, logger: Logger) throws(AuthError) {
        try retry.run("deletion") { () throws(AuthError) -> Void? in
            guard let user = try store.user(userID) else {
                // No profile to read may still be an expired one (a guest's) that names the user
                // until swept; nothing recreates a profile under an id once gone, so it can go.
                try store.delete(try store.deletableItems(of: userID) + [Keys.profileKey(userID)])
                return ()
            }
            guard user.profile.deletionRequestedAt != nil else {
                throw .internalError("finishing the deletion of a user that is not marked")
            }
            let items = try store.deletableItems(of: userID)
            try store.delete(items)
            // Before the profile goes: afterwards nothing says which addresses were the user's.
            try store.delete(AccountStore.addressItems(of: user))
            let claims = try store.emailClaims(of: user)
            if try store.deleteProfileAndLinks(user, emailClaims: claims) {
                logger.info("account deleted", metadata: ["userId": .string(userID), "items": .number(Int64(items.count + 1 + 2 * user.identities.count + claims.count))])
                return ()
            }
            return nil  // someone else finished or changed it meanwhile: read again
        }
    }

    /// Marks (no caller, no re-authentication) and deletes every item: for operators, for Apple's
    /// notifications and for the pruning of expired guests. `shouldDelete` decides on the profile
    /// as read again inside the loop (a user it refuses is left alone, even one already marked);
    /// `beforeMark` runs once, before the mark, unless an earlier request marked the user already.
    /// False when there is no such user, or `shouldDelete` refused it.
    func deleteWithoutCaller(userID: String, now: Int64, logger: Logger, beforeMark: () throws(AuthError) -> Void = {},
                             where shouldDelete: (UserProfile) -> Bool = { _ in true }) throws(AuthError) -> Bool {
        enum Outcome { case marked, noProfile, refused }
        var prepared = false
        let outcome = try retry.run("account deletion") { () throws(AuthError) -> Outcome? in
            guard let user = try store.user(userID) else { return .noProfile }
            guard shouldDelete(user.profile) else { return .refused }
            if user.profile.deletionRequestedAt != nil { return .marked }
            if !prepared {
                try beforeMark()
                prepared = true
            }
            return try store.markForDeletion(user, callerSessionID: nil, now: now) ? .marked : nil
        }
        switch outcome {
        case .refused: return false
        // Without a profile, only leftovers of an earlier deletion can be there to finish.
        case .noProfile: if try store.deletableItems(of: userID).isEmpty { return false }
        case .marked: break
        }
        try finish(userID: userID, logger: logger)
        return true
    }
}

/// Whether the caller must prove again who they are before deleting the account. The proof was
/// verified by its provider's entry in the registry (an ID token, an email code, a passkey).
struct Reauthentication: Sendable {
    /// A session younger than this needs no new proof, and a proof must be younger than this
    /// (AUTH_REAUTH_WINDOW).
    let window: Int64
    /// AUTH_CLOCK_SKEW: the tolerance every time claim gets, the proof's issue time too.
    var clockSkew: Int64 = 60

    /// A fresh ID token of one of the user's own identities, unless the session is young enough;
    /// a token presented anyway is checked anyway.
    func check(_ proof: ProvenIdentity?, user: UserView, sessionCreatedAt: Int64?, now: Int64) throws(AuthError) {
        // A guest has no identity to prove again: its access token is all it has.
        if user.profile.isGuest { return }
        guard let proof else {
            if let sessionCreatedAt, now - sessionCreatedAt < window { return }
            throw AuthError(.reauthenticationRequired, "sign in again: present a fresh ID token of one of your identities")
        }
        let identity = proof.identity
        guard user.identities.contains(where: { $0.provider == identity.provider && $0.subject.sameBytes(as: identity.subject) }) else {
            throw AuthError(.reauthenticationRequired, "the ID token is not one of this account's identities")
        }
        // An ID token stays valid for an hour: proving who you are needs one issued just now. An
        // email code is checked when it is used and lives AUTH_OTP_TTL, so it is fresh as it is.
        if !proof.isOneTimeProof {
            try Reauthentication.checkFresh(identity.claims, window: window + clockSkew, now: now)
        }
    }

    /// The proof's issue time: `auth_time` (when the user last authenticated) if present, else `iat`.
    static func checkFresh(_ claims: [String: JSONValue], window: Int64, now: Int64) throws(AuthError) {
        guard let issuedAt = (claims["auth_time"] ?? claims["iat"])?.doubleValue else {
            throw AuthError(.reauthenticationRequired, "the ID token does not say when it was issued; sign in again")
        }
        guard Double(now) - issuedAt <= Double(window) else {
            throw AuthError(.reauthenticationRequired, "the ID token was issued \(now - Int64(issuedAt)) s ago; present one issued within AUTH_REAUTH_WINDOW")
        }
    }
}

/// `delete-account`: re-authentication, the mark, then the deletion itself.
struct DeleteAccountFlow: Sendable {
    let callerCheck: CallerCheck
    let reauthentication: Reauthentication
    let store: AccountStore
    let deletion: AccountDeletion
    let clock: any WallClock
    let retry: OptimisticRetry
    let apple: AppleAccountTokens

    func authenticate(_ accessToken: String, logger: Logger) throws(AuthError) -> Caller {
        try callerCheck.check(accessToken, allowingPendingDeletion: true, logger: logger)
    }

    /// The deleted user's id. `interruptAfterMark` (AUTH_TEST_MODE=1 only) stops the request as a
    /// crash would, right after the mark, so recorded scenarios can show the resumption.
    func delete(for caller: Caller, proof: ProvenIdentity?, interruptAfterMark: Bool = false,
                logger: Logger) throws(AuthError) -> String {
        var revoked = false
        try callerCheck.retrying("account deletion", for: caller, with: retry, allowingPendingDeletion: true) { (user: UserView) throws(AuthError) -> Void? in
            // An earlier, authorised request marked it: finishing needs no new proof.
            if user.profile.deletionRequestedAt != nil { return () }
            try Caller(claims: caller.claims, user: user).requireAAL2()
            let now = clock.nowSeconds
            let session = try store.session(userID: caller.userID, sessionID: caller.sessionID)
            try reauthentication.check(proof, user: user, sessionCreatedAt: session?.createdAt, now: now)
            // Before the mark: once marked, the next sign-in finishes the deletion, and a token
            // Apple cannot be told about must not outlive the account (PROVIDER_UNAVAILABLE instead).
            if !revoked {
                try apple.revokeStored(userID: caller.userID, logger: logger)
                revoked = true
            }
            guard try store.markForDeletion(user, callerSessionID: caller.sessionID, now: now) else { return nil }
            logger.info("account deletion requested", metadata: ["userId": .string(caller.userID), "sessionId": .string(caller.sessionID)])
            return ()
        }
        if interruptAfterMark {
            throw .internalError("interrupted after the deletion mark (_testFault, AUTH_TEST_MODE=1)")
        }
        try deletion.finish(userID: caller.userID, logger: logger)
        return caller.userID
    }
}
