import Logging

/// `link-provider`: attach or detach a provider identity for the caller's user.
///
/// Link: the caller check's Query, a GetItem of the link, one transaction (3 requests); unlink:
/// the Query and one transaction (2). The profile's version condition makes the user copy read by
/// the caller check exact and the session check part of the write: a sign-out racing the change
/// wins or loses as a whole.
struct LinkProviderFlow: Sendable {
    let callerCheck: CallerCheck
    let store: AccountStore
    let clock: any WallClock
    let retry: OptimisticRetry
    let apple: AppleAccountTokens

    func authenticate(_ accessToken: String, logger: Logger) throws(AuthError) -> Caller {
        try callerCheck.check(accessToken, logger: logger)
    }

    /// Links an identity its provider's registry entry proved (an ID token verified, an email code used).
    func link(_ identity: VerifiedIdentity, for caller: Caller, logger: Logger) throws(AuthError) -> UserView {
        try callerCheck.retrying("link", for: caller, with: retry) { (user: UserView) throws(AuthError) -> UserView? in
            if let owner = try store.linkedUserID(identity.provider, identity.subject) {
                guard owner == caller.userID else {
                    throw AuthError(.identityLinkedToOtherUser, "this \(identity.provider.rawValue) account is already linked to another user")
                }
                return user
            }
            if user.identities.contains(where: { $0.provider == identity.provider }) {
                throw AuthError(.providerAlreadyLinked, "the user already has a different \(identity.provider.rawValue) account linked")
            }
            let now = clock.nowSeconds
            let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: now)
            let addition = AccountStore.IdentityAddition(identity: linked, provenBy: identity)
            switch try store.addIdentity(addition, to: user, callerSessionID: caller.sessionID, now: now) {
            case .added(let linkedUser, let upgradedGuest):
                logger.info(upgradedGuest ? "guest upgraded to a full user" : "linked an identity",
                            metadata: ["userId": .string(caller.userID), "provider": .string(identity.provider.rawValue)])
                return linkedUser
            case .identityTaken, .userChanged, .ceremonyRefused:
                return nil  // the re-read decides
            }
        }
    }

    /// Unlinking what is not linked leaves the user as requested: an idempotent success.
    /// Unlinking Apple revokes its stored token at Apple first (PROVIDER_UNAVAILABLE: nothing
    /// unlinked); the token's item goes in the unlink's transaction.
    func unlink(_ provider: ProviderName, for caller: Caller, logger: Logger) throws(AuthError) -> UserView {
        var revoked = false
        return try callerCheck.retrying("unlink", for: caller, with: retry) { (read: UserView) throws(AuthError) -> UserView? in
            var user = read
            guard let identity = user.identities.first(where: { $0.provider == provider }) else { return user }
            guard user.identities.count > 1 else {
                throw AuthError(.lastIdentity, "the \(provider.rawValue) identity is the user's last; link another before removing it")
            }
            if provider == .apple, !revoked {
                try apple.revokeStored(userID: caller.userID, logger: logger)
                revoked = true
            }
            let now = clock.nowSeconds
            switch try store.unlink(identity, from: user, callerSessionID: caller.sessionID, now: now) {
            case .committed:
                logger.info("unlinked an identity", metadata: ["userId": .string(caller.userID), "provider": .string(provider.rawValue)])
                user.identities.removeAll { $0.provider == provider }
                user.profile.apply(identityDelta: -1, now: now)
                return user
            case .lostRace:
                return nil
            }
        }
    }
}
