/// The account flows' writes: each is one transaction whose steps are named, so an outcome says
/// which condition failed rather than which position in the transaction did.
extension AccountStore {
    /// The stored form of a new refresh token of `family`, issued to `user`. It never promises more
    /// than the session has left (AUTH_SESSION_MAX_AGE) nor, for a guest, more than the guest's
    /// `ttl`, which this token moves to now + AUTH_GUEST_TTL.
    /// `familyBorn`: true for a new session's first token, and for the successor of a token that
    /// says so (see `RefreshTokenRecord.familyBorn`).
    func newRefreshToken(_ credential: RefreshTokenCredential, family: RefreshFamilyKey, familyBorn: Bool = true, sessionCreatedAt: Int64,
                         user: UserSnapshot, assurance: Assurance, now: Int64) -> RefreshTokenRecord {
        let guestExpiresAt = user.isGuest ? now + guestTTL : nil
        let expiresAt = min(now + refreshTokenTTL, sessionEnd(createdAt: sessionCreatedAt) ?? .max, guestExpiresAt ?? .max)
        var record = RefreshTokenRecord(credential: credential, family: family, familyBorn: familyBorn, createdAt: now, expiresAt: expiresAt,
                                        sessionCreatedAt: sessionCreatedAt, user: user)
        record.guestExpiresAt = guestExpiresAt
        record.assurance = assurance
        return record
    }

    static func emailClaimItem(_ key: String, userID: String) -> Item {
        var item = Keys.email(key).item
        item["userId"] = .s(userID)
        return item
    }

    // MARK: - A new user

    struct NewAccount {
        /// Version 1, with the first session among its active sessions and its one identity.
        var user: UserView
        var identity: LinkedIdentity
        /// The verified email to claim for this user, if any.
        var emailClaim: String?
        var session: SessionRecord
        var refreshToken: RefreshTokenRecord
    }

    enum AccountCreation {
        case created
        /// The identity got linked to someone meanwhile.
        case identityTaken
        /// The email got claimed by someone meanwhile.
        case emailTaken
    }

    private enum CreationStep: Equatable { case profile, link, email }

    /// The user, both sides of its link, the email claim, the first session and its refresh token:
    /// one transaction, conditional on none of them existing (concurrent first sign-ins of one
    /// identity create exactly one user).
    func create(_ account: NewAccount) throws(AuthError) -> AccountCreation {
        let userID = account.user.profile.userID
        var plan = TransactionPlan<CreationStep>()
        plan.add(.profile, .put(account.user.profile.item, condition: "attribute_not_exists(PK)"))
        plan.add(.link, .put(account.identity.linkItem(userID: userID), condition: "attribute_not_exists(PK)"))
        plan.add([.put(account.identity.userSideItem(userID: userID), condition: "attribute_not_exists(PK)")])
        if let email = account.emailClaim {
            plan.add(.email, .put(AccountStore.emailClaimItem(email, userID: userID), condition: "attribute_not_exists(PK)"))
        }
        plan.add([
            .put(account.session.item(liveTokenExpiresAt: account.refreshToken.expiresAt), condition: "attribute_not_exists(PK)"),
            .put(account.refreshToken.item),
        ])
        guard let cancellation = try table.run(plan) else { return .created }
        if cancellation.failed(.link) { return .identityTaken }
        if cancellation.failed(.email) { return .emailTaken }
        throw cancellation.unexpected("user creation")
    }

    // MARK: - A new session of an existing user

    struct SessionOpening {
        /// The user as it will be: profile refreshed, session added, evictions removed, version + 1.
        var user: UserView
        /// The profile version the flow read.
        var readVersion: Int64
        /// An identity joining the user in the same transaction (sign-in by verified email).
        var joining: LinkedIdentity?
        var session: SessionRecord
        var refreshToken: RefreshTokenRecord
        /// Sessions leaving to respect the session limit.
        var evicted: [String]
        /// Their refresh tokens not revoked yet, revoked in the same commit as far as it has room.
        var evictedTokens: [TableKey] = []
        /// The profile's email changed and the user held a claim on the old one.
        var emailClaimMove: EmailClaimMove? = nil
        /// What the proof itself commits with the session (a passkey's challenge consumed and
        /// sign count moved), whose failed condition refuses the sign-in.
        var ceremony: [TransactWriteAction] = []
    }

    /// The claim on an address the user's provider no longer reports, released, and the new
    /// address claimed when it is verified, keyable and nobody's (else the user holds no claim):
    /// otherwise whoever gets the old address later (a recycled mailbox) joins the account by it.
    struct EmailClaimMove {
        var release: String
        var claim: String?
    }

    /// What moves when `profile` (refreshed from an identity) no longer has `previousEmail`;
    /// nil when the email key is unchanged or the user holds no claim on the old address.
    func emailClaimMove(of profile: UserProfile, previousEmail: String?) throws(AuthError) -> EmailClaimMove? {
        guard let old = previousEmail.flatMap(EmailKey.of) else { return nil }
        let new = profile.emailVerified ? profile.email.flatMap(EmailKey.of) : nil
        if let new, new.sameBytes(as: old) { return nil }
        guard let oldOwner = try emailOwner(old), oldOwner.sameBytes(as: profile.userID) else { return nil }
        guard let new, try emailOwner(new) == nil else { return EmailClaimMove(release: old, claim: nil) }
        return EmailClaimMove(release: old, claim: new)
    }

    enum SessionOpeningOutcome {
        /// False when some evicted tokens did not fit in the transaction and are still to mark.
        case opened(revokedEveryEvictedToken: Bool)
        /// Another write changed the user since the flow read it.
        case userChanged
        /// Joining: the identity got linked to someone meanwhile.
        case identityTaken
        /// A condition of `ceremony` failed: reasons in its order.
        case ceremonyRefused([CancellationReason])
    }

    private enum OpeningStep: Equatable { case profile, link, userSide, emailRelease, emailClaim, ceremony }

    func open(_ opening: SessionOpening, now: Int64) throws(AuthError) -> SessionOpeningOutcome {
        let userID = opening.user.profile.userID
        var plan = TransactionPlan<OpeningStep>()
        plan.add(.profile, .put(opening.user.profile.item, condition: "#version = :read",
                                attributes: ExpressionAttributes(names: ["#version": "version"], values: [":read": .n(opening.readVersion)])))
        if let joining = opening.joining {
            plan.add(.link, .put(joining.linkItem(userID: userID), condition: "attribute_not_exists(PK)"))
            plan.add(.userSide, .put(joining.userSideItem(userID: userID), condition: "attribute_not_exists(PK)"))
        }
        if let move = opening.emailClaimMove {
            plan.add(.emailRelease, .delete(key: Keys.email(move.release), condition: "userId = :user",
                                            attributes: ExpressionAttributes(values: [":user": .s(userID)])))
            if let claim = move.claim { plan.add(.emailClaim, .put(AccountStore.emailClaimItem(claim, userID: userID), condition: "attribute_not_exists(PK)")) }
        }
        plan.add([
            .put(opening.session.item(liveTokenExpiresAt: opening.refreshToken.expiresAt), condition: "attribute_not_exists(PK)"),
            .put(opening.refreshToken.item),
        ])
        plan.add(.ceremony, opening.ceremony)
        // Evicted sessions are listed for their access tokens in the commit that evicts them.
        plan.add(revocations.entries(sessionIDs: opening.evicted, now: now))
        plan.add(opening.evicted.map { AccountStore.revoke(Keys.session(userID, $0), now: now, reason: .evicted) })
        // The evicted sessions' tokens ride in the same commit: one sync, not a second transaction.
        let room = max(0, AccountStore.transactionLimit - plan.actions.count)
        plan.add(opening.evictedTokens.prefix(room).map { AccountStore.revoke($0, now: now) })
        guard let cancellation = try table.run(plan) else { return .opened(revokedEveryEvictedToken: opening.evictedTokens.count <= room) }
        if cancellation.failed(.ceremony) { return .ceremonyRefused(cancellation.reasons(of: .ceremony)) }
        if cancellation.failed(.link) { return .identityTaken }
        if cancellation.failed(.profile) || cancellation.failed(.userSide) || cancellation.failed(.emailRelease)
            || cancellation.failed(.emailClaim) { return .userChanged }
        throw cancellation.unexpected("session opening")
    }

    // MARK: - Refresh token rotation

    enum RotationOutcome {
        case rotated
        /// The session was signed out, or (a family of an earlier release) moved to generations
        /// already by another of its tokens: the session item decides which.
        case sessionChanged
        /// Lost a race: the user changed since the token's copy was made (or the session left
        /// the profile), and/or another refresh rotated the token first.
        case lostRace(userChanged: Bool, tokenRotated: Bool)
    }

    private enum RotationStep: Equatable { case retireOld, profile, session }

    /// One live token per family: the old token ACTIVE → USED with the nonce its successor's
    /// secret derives from (visible for the grace period only), the successor put, the token
    /// before the old one deleted (so a family keeps two token items at most), the profile checked
    /// at the version of the user copy the new token carries and with the session still active,
    /// and the session moved to the new generation, conditional on being active, so no token
    /// minted by a refresh racing a revocation survives it. A token of an earlier release's family
    /// (no generation) moves the family to generations, conditional on no other token having
    /// done so: that one alone continues the family. The new token's `guestExpiresAt` (its user
    /// copy is a guest's, exact by its version): the profile's `ttl` moves forward to it.
    func rotate(_ old: RefreshTokenRecord, to new: RefreshTokenRecord, successorNonce: [UInt8], refreshGrace: Int64,
                userVersion: Int64, now: Int64, activeAtMilliseconds: Int64) throws(AuthError) -> RotationOutcome {
        let guestExpiresAt = new.guestExpiresAt
        let migrating = old.generation == nil
        let retireNames = ["#status": "status", "#ttl": "ttl"]
        var retireValues: [String: AttributeValue] = [
            ":used": .s(RefreshTokenStatus.used.rawValue), ":active": .s(RefreshTokenStatus.active.rawValue),
            ":now": .s(Timestamps.format(now)), ":next": .s(new.key.sk), ":nonce": .s(Base64.urlEncoded(successorNonce)),
        ]
        var retire = "SET #status = :used, usedAt = :now, replacedBy = :next, successorNonce = :nonce"
        if !migrating {
            // Past the grace period the item is not needed: the session's generation tells reuse.
            retire += ", #ttl = :ttl"
            retireValues[":ttl"] = .n(now + refreshGrace)
        } else if let end = sessionEnd(createdAt: new.sessionCreatedAt ?? now) {
            // A token of the earlier format names no family: its item is what recognises its reuse,
            // for as long as the family can live.
            retire += ", #ttl = :ttl"
            retireValues[":ttl"] = .n(end)
        } else {
            retire += " REMOVE #ttl"
        }
        var plan = TransactionPlan<RotationStep>()
        plan.add(.retireOld, .update(key: old.key, update: retire, condition: "#status = :active",
                                     attributes: ExpressionAttributes(names: retireNames, values: retireValues)))
        plan.add([.put(new.item)])
        if let generation = old.generation, generation > 1 {
            plan.add([.delete(key: Keys.refreshToken(old.userID, Keys.familyTokenID(old.familyID, generation: generation - 1)))])
        }
        var profileNames = ["#sid": old.familyID, "#version": "version"]
        var profileValues: [String: AttributeValue] = [":now": .n(activeAtMilliseconds), ":version": .n(userVersion)]
        var profileUpdate = "SET activeSessions.#sid = :now"
        if let guestExpiresAt {
            profileUpdate += ", #ttl = :guestExpiry"
            profileNames["#ttl"] = "ttl"
            profileValues[":guestExpiry"] = .n(guestExpiresAt)
        }
        plan.add(.profile, .update(
            key: Keys.profileKey(old.userID), update: profileUpdate,
            condition: "attribute_exists(activeSessions.#sid) AND #version = :version",
            attributes: ExpressionAttributes(names: profileNames, values: profileValues)))
        var sessionUpdate = "SET lastActiveAt = :now, #ttl = :ttl, liveGeneration = :generation"
        var sessionValues: [String: AttributeValue] = [
            ":now": .s(Timestamps.format(now)), ":active": .s(SessionStatus.active.rawValue),
            ":ttl": .n(new.expiresAt), ":generation": .n(new.generation ?? 1),
        ]
        var sessionCondition = "#status = :active"
        if migrating, let familyKey = new.familyKey {
            sessionUpdate += ", familyKey = :familyKey"
            sessionValues[":familyKey"] = familyKey.stored
            sessionCondition += " AND attribute_not_exists(liveGeneration)"
        }
        plan.add(.session, .update(
            key: Keys.session(old.userID, old.familyID), update: sessionUpdate, condition: sessionCondition,
            attributes: ExpressionAttributes(names: ["#status": "status", "#ttl": "ttl"], values: sessionValues)))
        guard let cancellation = try table.run(plan) else { return .rotated }
        let userChanged = cancellation.failed(.profile), tokenRotated = cancellation.failed(.retireOld)
        if tokenRotated || userChanged { return .lostRace(userChanged: userChanged, tokenRotated: tokenRotated) }
        if cancellation.failed(.session) { return .sessionChanged }
        throw cancellation.unexpected("refresh")
    }

    enum GraceOutcome {
        case confirmed
        /// The live token was rotated again meanwhile: the presented one is two generations old.
        case successorRotated
        /// The user changed since the live token's copy was made (or the session left the profile).
        case userChanged
        case sessionRevoked
    }

    private enum GraceStep: Equatable { case successor, profile, session }

    /// A retry within the grace period hands out the live token again; the checks of a rotation
    /// still hold (the live token is still the live one, the session active, the user copy
    /// exact) and the session's activity moves forward, but nothing of the family changes.
    func confirmGraceRetry(successor: RefreshTokenRecord, userVersion: Int64, now: Int64) throws(AuthError) -> GraceOutcome {
        var plan = TransactionPlan<GraceStep>()
        plan.add(.successor, .conditionCheck(
            key: successor.key, condition: "#status = :active",
            attributes: ExpressionAttributes(names: ["#status": "status"], values: [":active": .s(RefreshTokenStatus.active.rawValue)])))
        plan.add(.profile, .update(
            key: Keys.profileKey(successor.userID), update: "SET activeSessions.#sid = :now",
            condition: "attribute_exists(activeSessions.#sid) AND #version = :version",
            attributes: ExpressionAttributes(names: ["#sid": successor.familyID, "#version": "version"],
                                             values: [":now": .n(now), ":version": .n(userVersion)])))
        plan.add(.session, .update(
            key: Keys.session(successor.userID, successor.familyID), update: "SET lastActiveAt = :now",
            condition: "#status = :active",
            attributes: ExpressionAttributes(names: ["#status": "status"],
                                             values: [":now": .s(Timestamps.format(now)), ":active": .s(SessionStatus.active.rawValue)])))
        guard let cancellation = try table.run(plan) else { return .confirmed }
        if cancellation.failed(.successor) { return .successorRotated }
        if cancellation.failed(.session) { return .sessionRevoked }
        if cancellation.failed(.profile) { return .userChanged }
        throw cancellation.unexpected("grace retry")
    }

    // MARK: - Linking and unlinking

    enum IdentityChange {
        case committed
        /// The user, the identity or the caller's session changed since the flow read them.
        case lostRace
    }

    /// An identity joining a user, with what its items carry beside the link (a passkey's key,
    /// what `list` shows) and the proof's own writes (a registration's challenge consumed).
    struct IdentityAddition {
        var identity: LinkedIdentity
        /// What proved it, to fill a guest's profile as a sign-in would; nil: nothing to fill it with.
        var provenBy: VerifiedIdentity?
        var linkAttributes: Item = [:]
        var userSideAttributes: Item = [:]
        var ceremony: [TransactWriteAction] = []
        /// What a guest kept under its `ttl` that must outlive it (a passkey's user handle).
        var upgradeWrites: [TransactWriteAction] = []
    }

    enum IdentityAdditionOutcome {
        /// The user as it now is; `upgradedGuest`: the identity was a guest's first.
        case added(UserView, upgradedGuest: Bool)
        /// A condition of the proof's own writes failed.
        case ceremonyRefused
        /// Either side of the link exists already.
        case identityTaken
        /// The user or the caller's session changed since the flow read them.
        case userChanged
    }

    private enum AdditionStep: Equatable { case ceremony, link, userSide, profile }

    /// The one write of a new identity, whichever flow adds it: both sides of the link and the
    /// profile, in one transaction conditional on the version the flow read (so its copy of the
    /// user was exact: a concurrent registration re-reads, and the limit of 10 passkeys holds)
    /// and on the caller's session still being active. A user's next identity
    /// counts one more; a guest's first makes it a full user (same id, same sessions, the profile
    /// filled from the identity, written whole without `isGuest` and `ttl`), whose sessions and
    /// tokens then get a full user's `ttl` back.
    func addIdentity(_ addition: IdentityAddition, to read: UserView, callerSessionID: String,
                     now: Int64) throws(AuthError) -> IdentityAdditionOutcome {
        let userID = read.profile.userID
        let upgrading = read.profile.isGuest
        var user = read
        var plan = TransactionPlan<AdditionStep>()
        plan.add(.ceremony, addition.ceremony)
        plan.add(.link, .put(addition.identity.linkItem(userID: userID).merging(addition.linkAttributes) { $1 },
                             condition: "attribute_not_exists(PK)"))
        plan.add(.userSide, .put(addition.identity.userSideItem(userID: userID).merging(addition.userSideAttributes) { $1 },
                                 condition: "attribute_not_exists(PK)"))
        if upgrading {
            user.identities = [addition.identity]
            user.profile.isGuest = false
            user.profile.guestExpiresAt = nil
            user.profile.identityCount = 1
            if let provenBy = addition.provenBy { user.profile.refresh(from: provenBy, profileName: nil) }
            user.profile.updatedAt = now
            user.profile.version = read.profile.version + 1
            plan.add(.profile, .put(user.profile.item, condition: "attribute_exists(activeSessions.#sid) AND #version = :read",
                                    attributes: ExpressionAttributes(names: ["#sid": callerSessionID, "#version": "version"],
                                                                     values: [":read": .n(read.profile.version)])))
            plan.add(addition.upgradeWrites)
        } else {
            plan.add(.profile, identityCountChange(read, by: 1, callerSessionID: callerSessionID, now: now))
            user.identities.append(addition.identity)
            user.profile.apply(identityDelta: 1, now: now)
        }
        if let cancellation = try table.run(plan) {
            if cancellation.failed(.ceremony) { return .ceremonyRefused }
            if cancellation.failed(.link) || cancellation.failed(.userSide) { return .identityTaken }
            if cancellation.failed(.profile) { return .userChanged }
            throw cancellation.unexpected("identity link")
        }
        if upgrading { dropGuestExpiry(of: userID, now: now) }
        return .added(user, upgradedGuest: upgrading)
    }

    private enum UnlinkStep: Equatable { case profile, userSide, link }

    /// `callerSessionID` nil: no caller (Apple's notifications), only the version guards it.
    func unlink(_ identity: LinkedIdentity, from user: UserView, callerSessionID: String?, now: Int64) throws(AuthError) -> IdentityChange {
        let userID = user.profile.userID
        var plan = TransactionPlan<UnlinkStep>()
        plan.add(.profile, identityCountChange(user, by: -1, callerSessionID: callerSessionID, now: now))
        plan.add(.userSide, .delete(key: Keys.userIdentity(userID, identity.provider, subject: identity.subject), condition: "subject = :subject",
                                    attributes: ExpressionAttributes(values: [":subject": .s(identity.subject)])))
        plan.add(.link, .delete(key: Keys.identityLink(identity.provider, identity.subject), condition: "userId = :user",
                                attributes: ExpressionAttributes(values: [":user": .s(userID)])))
        // The provider's stored token goes with the identity (revoked at the provider before).
        plan.add([.delete(key: Keys.providerToken(userID, identity.provider))])
        guard let cancellation = try table.run(plan) else { return .committed }
        guard cancellation.failed(.profile) || cancellation.failed(.userSide) || cancellation.failed(.link) else {
            throw cancellation.unexpected("unlink")
        }
        return .lostRace
    }

    /// Bumps the version because the user's identities change.
    func identityCountChange(_ user: UserView, by delta: Int64, callerSessionID: String?, now: Int64) -> TransactWriteAction {
        var names = ["#version": "version"]
        if let callerSessionID { names["#sid"] = callerSessionID }
        return .update(key: Keys.profileKey(user.profile.userID),
                update: "SET identityCount = identityCount + :delta, updatedAt = :now, #version = #version + :one",
                condition: callerSessionID == nil ? "#version = :version" : "attribute_exists(activeSessions.#sid) AND #version = :version",
                attributes: ExpressionAttributes(
                    names: names,
                    values: [":delta": .n(delta), ":now": .s(Timestamps.format(now)), ":one": .n(1), ":version": .n(user.profile.version)]))
    }
}

extension UserProfile {
    /// What `AccountStore.addIdentity`/`unlink` do to a full user's stored profile, applied to a copy.
    mutating func apply(identityDelta: Int64, now: Int64) {
        identityCount += identityDelta
        updatedAt = now
        version += 1
    }
}
