/// Sessions as the `signout` and `sessions` handlers see them, and the account deletion's items.
extension AccountStore {
    /// Every SESSION# item of a user (revoked ones included, until their `ttl`).
    func sessions(of userID: String) throws(AuthError) -> [SessionRecord] {
        try table.queryAll(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :prefix)",
            attributes: ExpressionAttributes(values: [":pk": .s(Keys.user(userID)), ":prefix": .s(Keys.sessionPrefix)])))
            .compactMap(SessionRecord.init(item:))
    }

    /// The sessions whose item is still there (its `ttl`, the live token's expiry, not passed) and active.
    func liveSessionIDs(of userID: String) throws(AuthError) -> Set<String> {
        Set(try sessions(of: userID).filter { $0.status == .active }.map(\.sessionID))
    }

    func session(userID: String, sessionID: String) throws(AuthError) -> SessionRecord? {
        try table.read(Keys.session(userID, sessionID)).flatMap(SessionRecord.init(item:))
    }

    /// The profile write that takes `sessionIDs` out of the user's active sessions: conditional
    /// on the version the flow read, so concurrent sign-outs count each session once, and bumping
    /// it, so that every refresh re-reads the user.
    static func activeSessionsGate(_ user: UserView, removing sessionIDs: [String]) -> TransactWriteAction {
        var remaining = user.profile.activeSessions
        for sessionID in sessionIDs { remaining[sessionID] = nil }
        return .update(key: Keys.profileKey(user.profile.userID), update: "SET activeSessions = :remaining, #version = #version + :one",
                       condition: "#version = :read",
                       attributes: ExpressionAttributes(names: ["#version": "version"],
                                                        values: [":remaining": .m(remaining.mapValues { .n($0) }), ":one": .n(1),
                                                                 ":read": .n(user.profile.version)]))
    }

    // MARK: - Account deletion

    /// Marks the user for deletion, conditional on the version read (and, for a caller, on its
    /// session being active): from this commit on every flow treats the account as gone, and
    /// whichever request meets it next finishes the deletion. False when the user changed.
    func markForDeletion(_ user: UserView, callerSessionID: String?, now: Int64) throws(AuthError) -> Bool {
        var condition = "#version = :read"
        var names = ["#version": "version"]
        if let callerSessionID {
            condition += " AND attribute_exists(activeSessions.#sid)"
            names["#sid"] = callerSessionID
        }
        let mark = TransactWriteAction.update(
            key: Keys.profileKey(user.profile.userID), update: "SET deletionRequestedAt = :now, #version = #version + :one",
            condition: condition,
            attributes: ExpressionAttributes(names: names, values: [":now": .s(Timestamps.format(now)), ":one": .n(1),
                                                                   ":read": .n(user.profile.version)]))
        // From the mark on the account is gone: its user and every session it had are listed in
        // the same commit, so its access tokens end with it wherever they are checked.
        let listed = revocations.entries(sessionIDs: user.profile.activeSessions.keys.sorted(), deletedUserID: user.profile.userID, now: now)
        var actions = [mark] + listed.prefix(AccountStore.transactionLimit - 1)
        if listed.count >= AccountStore.transactionLimit {
            // More sessions than one transaction holds: the user's entry alone refuses every
            // token of theirs, so it is the one that must not be left out.
            actions = [mark] + listed.suffix(1) + listed.prefix(AccountStore.transactionLimit - 2)
        }
        return try table.transact(actions) == nil
    }

    /// Every key of the user's partition except PROFILE and the identities: sessions, refresh
    /// tokens, and whatever later kinds live there. Expired ones too: they still name the user
    /// until DynamoDB's sweeper (or a rewrite of their local file) takes them, which may be days.
    func deletableItems(of userID: String) throws(AuthError) -> [TableKey] {
        try table.queryAll(QueryRequest(keyCondition: "PK = :pk", attributes: ExpressionAttributes(values: [":pk": .s(Keys.user(userID))]),
                                        includingExpired: true))
            .compactMap(TableKey.init(item:))
            .filter { $0.sk != Keys.profile && !$0.sk.hasPrefix(Keys.identityPrefix) }
    }

    /// Deletes items in transactions of 100 (DynamoDB's limit); each deletion is idempotent.
    func delete(_ keys: [TableKey]) throws(AuthError) {
        var start = 0
        while start < keys.count {
            let batch = keys[start..<min(keys.count, start + AccountStore.transactionLimit)].map { TransactWriteAction.delete(key: $0) }
            if let reasons = try table.transact(batch) {
                throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "deletion batch cancelled: \(reasons.map(\.code))")
            }
            start += AccountStore.transactionLimit
        }
    }

    /// The items outside the user's partition that an address of the user names in their keys:
    /// the live one-time code (`OTP#<address>`) and the per-address code counter
    /// (`RATE#otp-email#<address without +tag>`). Nothing points from the user to them, so they
    /// are found by the addresses the user still holds: its profile's, its identities' and its
    /// email identities' subjects. Deleting the counter gives that mailbox a fresh hour of codes;
    /// only the account's holder can cause it, and the per-IP limit still holds.
    static func addressItems(of user: UserView) -> [TableKey] {
        let addresses = [user.profile.email].compactMap { $0 } + user.identities.compactMap(\.email)
            + user.identities.filter { $0.provider == .email }.map(\.subject)
        var keys: Set<TableKey> = []
        for raw in addresses {
            // An address that is no EmailAddress never got a code nor a counter.
            guard let address = try? EmailAddress(raw) else { continue }
            keys.insert(OneTimeCodeStore.key(address))
            keys.insert(Keys.rateCounter(.oneTimeCodesPerEmail, key: address.rateLimitKey))
        }
        return keys.sorted { ($0.pk, $0.sk) < ($1.pk, $1.sk) }
    }

    /// The email claims that point at the user (an identity's email at the time it was claimed).
    /// Claims written before email keys were ASCII-only were keyed by full Unicode lowercasing:
    /// both forms are candidates, and only those this user owns are deleted.
    func emailClaims(of user: UserView) throws(AuthError) -> [String] {
        let addresses = user.identities.compactMap(\.email) + (user.profile.email.map { [$0] } ?? [])
        var candidates = Set(addresses.map { $0.lowercased() })
        candidates.formUnion(addresses.compactMap(EmailKey.of))
        var claims: [String] = []
        for email in candidates.sorted() where try emailOwner(email) == user.profile.userID { claims.append(email) }
        return claims
    }

    /// The last step: the profile, both sides of every link and the email claims, in one
    /// transaction, so no IDENTITY# or EMAIL# item ever points at a user that is gone.
    /// False when the profile is no longer marked (someone else finished first).
    func deleteProfileAndLinks(_ user: UserView, emailClaims: [String]) throws(AuthError) -> Bool {
        let userID = user.profile.userID
        let owned = ExpressionAttributes(values: [":user": .s(userID)])
        var plan = TransactionPlan<FinalDeletionStep>()
        plan.add(.profile, .delete(key: Keys.profileKey(userID), condition: "attribute_exists(deletionRequestedAt)"))
        for identity in user.identities {
            plan.add([.delete(key: Keys.userIdentity(userID, identity.provider, subject: identity.subject)),
                      .delete(key: Keys.identityLink(identity.provider, identity.subject), condition: "userId = :user", attributes: owned)])
        }
        plan.add(emailClaims.map { .delete(key: Keys.email($0), condition: "userId = :user", attributes: owned) })
        guard let cancellation = try table.run(plan) else { return true }
        if cancellation.failed(.profile) { return false }
        throw cancellation.unexpected("final deletion")
    }

    private enum FinalDeletionStep: Equatable { case profile }
}
