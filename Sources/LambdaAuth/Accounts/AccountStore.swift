import Crypto

/// The single-table layout (contract sections 6 and 12) behind the few operations the account
/// flows need. Flows decide; the store knows keys, item shapes, conditions and which named step of
/// a transaction failed, and turns table failures into the contract's errors. Every read here
/// decides a write, so every read is strongly consistent (GetItem and base-table Query are).
struct AccountStore: Sendable {
    /// Actions in one DynamoDB transaction.
    static let transactionLimit = 100

    let table: any Table
    /// Sessions and refresh tokens live this long past their last use.
    let refreshTokenTTL: Int64
    /// A guest's items live this long past its last sign-in or refresh (AUTH_GUEST_TTL).
    var guestTTL: Int64 = 2_592_000
    /// No refresh succeeds once a session is this old (AUTH_SESSION_MAX_AGE; 0: no limit).
    var sessionMaxAge: Int64 = 7_776_000
    /// How long a revocation stays on the list: AUTH_ACCESS_TOKEN_TTL + AUTH_CLOCK_SKEW, the
    /// longest an access token of the ended session can still be accepted somewhere.
    var revocationRetention: Int64 = 960

    /// Every revocation's entries go through it, inside the revocation's own transaction.
    var revocations: RevocationLog { RevocationLog(table: table, retention: revocationRetention) }

    /// When a session opened at `createdAt` can no longer refresh (nil: never, by age).
    func sessionEnd(createdAt: Int64) -> Int64? {
        sessionMaxAge > 0 ? createdAt + sessionMaxAge : nil
    }

    // MARK: - Reads

    /// The user an identity is linked to.
    func linkedUserID(_ provider: ProviderName, _ subject: String) throws(AuthError) -> String? {
        try table.read(Keys.identityLink(provider, subject))?["userId"]?.stringValue
    }

    /// The user holding the claim on a verified email address.
    func emailOwner(_ email: String) throws(AuthError) -> String? {
        try table.read(Keys.email(email))?["userId"]?.stringValue
    }

    /// PROFILE and every identity of a user, in one query (none of the many SESSION#/REFRESH# items).
    func user(_ userID: String) throws(AuthError) -> UserView? {
        let items = try table.queryAll(QueryRequest(
            keyCondition: "PK = :pk AND SK < :upper",
            attributes: ExpressionAttributes(values: [":pk": .s(Keys.user(userID)), ":upper": .s(Keys.profileAndIdentitiesUpperBound)])))
        var profile: UserProfile?
        var identities: [LinkedIdentity] = []
        var secondFactor = SecondFactorItems()
        for item in items {
            if let parsed = UserProfile(item: item) { profile = parsed }
            if let identity = LinkedIdentity(userSideItem: item) { identities.append(identity) }
            secondFactor.collect(item)
        }
        return profile.map { UserView(profile: $0, identities: identities, secondFactor: secondFactor) }
    }

    /// A presented refresh token as the store finds it.
    enum FoundRefreshToken {
        /// Its item, whose hash the presented secret matches.
        case item(RefreshTokenRecord, secret: [UInt8])
        /// A token of the current format whose item is gone (a generation that is no longer live,
        /// or one swept past its expiry), proven by its family's key: its session decides.
        case retired(RefreshTokenCredential, session: SessionRecord)

        /// The token's user and session (its family), proven by its secret or its family's key.
        var owner: (userID: String, sessionID: String) {
            switch self {
            case .item(let record, _): return (record.userID, record.familyID)
            case .retired(let credential, _): return (credential.userID, credential.familyID)
            }
        }
    }

    /// Finds what a presented token names: by the key it carries (one GetItem; a second, of its
    /// session, when that item is gone), or (a token of the first format) once through GSI1.
    /// Unknown, forged or of a family that is gone: REFRESH_TOKEN_NOT_FOUND.
    func findRefreshToken(presented token: String) throws(AuthError) -> FoundRefreshToken {
        var found: FoundRefreshToken?
        switch RefreshTokenCredential.parse(token) {
        case .unknown: break
        case .family(let presented):
            if let record = try refreshToken(at: Keys.refreshToken(presented.userID, presented.tokenID)) {
                // The tag too: one token has one spelling.
                if Self.secretMatches(record, presented.secretHash), let key = record.familyKey, presented.authenticated(by: key) != nil {
                    found = .item(record, secret: presented.secret)
                }
            } else if let session = try session(userID: presented.userID, sessionID: presented.familyID),
                      let key = session.familyKey, let credential = presented.authenticated(by: key) {
                found = .retired(credential, session: session)
            }
        case .keyed(let userID, let tokenID, let secret):
            // Only an item of that format: a family's items are named by the current format alone.
            if let record = try refreshToken(at: Keys.refreshToken(userID, tokenID)), record.generation == nil,
               Self.secretMatches(record, SHA256.hexDigest(of: secret)) {
                found = .item(record, secret: secret)
            }
        case .legacy(let tokenHash, let secret):
            found = try refreshToken(legacyHash: tokenHash).map { .item($0, secret: secret) }
        }
        guard let found else { throw AuthError(.refreshTokenNotFound, "the refresh token is not known") }
        return found
    }

    /// The item of a presented token whose item still exists (sign-out by refresh token).
    func refreshToken(presented token: String) throws(AuthError) -> RefreshTokenRecord {
        guard case .item(let record, _) = try findRefreshToken(presented: token) else {
            throw AuthError(.refreshTokenNotFound, "the refresh token is not known")
        }
        return record
    }

    /// The presented secret hashes to the stored `secretHash` (compared in constant time: a forged
    /// secret learns nothing from timing).
    private static func secretMatches(_ record: RefreshTokenRecord, _ presentedHash: String) -> Bool {
        guard let expected = record.secretHash else { return false }
        return constantTimeEqual(expected.utf8, presentedHash.utf8)
    }

    /// A token of the earlier, unkeyed format: located through GSI1 by its hash, then re-read
    /// from the base table, so the index's possibly stale copy decides nothing.
    func refreshToken(legacyHash tokenHash: String) throws(AuthError) -> RefreshTokenRecord? {
        let located = try table.queryAll(QueryRequest(
            indexName: Keys.tokenHashIndex, keyCondition: "GSI1PK = :hash",
            attributes: ExpressionAttributes(values: [":hash": .s(Keys.tokenHashIndexKey(hash: tokenHash))])))
        guard let indexed = located.lazy.compactMap(RefreshTokenRecord.init(item:)).first,
              let record = try refreshToken(at: indexed.key),
              record.secretHash == nil, constantTimeEqual(record.tokenHash.utf8, tokenHash.utf8) else { return nil }
        return record
    }

    /// Every refresh token item of a user, in one query of its partition.
    func refreshTokens(of userID: String) throws(AuthError) -> [RefreshTokenRecord] {
        try refreshTokenItems(of: userID, prefix: Keys.refreshTokenPrefix).compactMap(RefreshTokenRecord.init(item:))
    }

    /// The keys of a user's tokens in `families` that are not revoked yet, picked by two
    /// attributes (building whole records was most of a revocation's time). Families this
    /// release began are read by their own prefix; any other means reading every token of the
    /// user, revoked ones included (they stay a day): a sign-in that evicted a session grew
    /// with every sign-in of the user's day.
    func unrevokedRefreshTokenKeys(of userID: String, families: Set<String>) throws(AuthError) -> [TableKey] {
        func unrevoked(_ item: Item) -> Bool { item["status"]?.stringValue != RefreshTokenStatus.revoked.rawValue }
        if let items = try familyBornTokenItems(of: userID, families: families) {
            return items.filter(unrevoked).compactMap(TableKey.init(item:))
        }
        return try refreshTokenItems(of: userID, prefix: Keys.refreshTokenPrefix).compactMap { item in
            guard let family = item["familyId"]?.stringValue, families.contains(family), unrevoked(item) else { return nil }
            return TableKey(item: item)
        }
    }

    /// Every token of `families`, one query of each family's prefix, when each family has items
    /// and all of them say `familyBorn`; nil otherwise (a family an earlier release began, or
    /// one with no items left), and for more families than a few queries are worth.
    private func familyBornTokenItems(of userID: String, families: Set<String>) throws(AuthError) -> [Item]? {
        guard families.count <= AccountStore.familyQueryLimit else { return nil }
        var items: [Item] = []
        for family in families {
            let found = try refreshTokenItems(of: userID, prefix: Keys.familyTokenPrefix(family))
            guard !found.isEmpty, found.allSatisfy(RefreshTokenRecord.isFamilyBorn) else { return nil }
            items += found
        }
        return items
    }

    /// Past this many families, one query of all the user's tokens costs less than one each.
    static let familyQueryLimit = 4

    private func refreshTokenItems(of userID: String, prefix: String) throws(AuthError) -> [Item] {
        try table.queryAll(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :prefix)",
            attributes: ExpressionAttributes(values: [":pk": .s(Keys.user(userID)), ":prefix": .s(prefix)])))
    }

    func refreshToken(at key: TableKey) throws(AuthError) -> RefreshTokenRecord? {
        try table.read(key).flatMap(RefreshTokenRecord.init(item:))
    }

    /// When a session began (for tokens stored before they carried it).
    func sessionCreatedAt(userID: String, sessionID: String) throws(AuthError) -> Int64? {
        try table.read(Keys.session(userID, sessionID))?["createdAt"].flatMap(Timestamps.parse)
    }

    // MARK: - Revocation

    /// The one revoke: a session or token item becomes REVOKED, visible for a day. A session's
    /// `reason` rides in the same write, so the stream record alone tells why it ended (ItemEvents).
    static func revoke(_ key: TableKey, now: Int64, condition: String? = nil, reason: SessionEndReason? = nil) -> TransactWriteAction {
        var values: [String: AttributeValue] = [":revoked": .s(SessionStatus.revoked.rawValue),
                                                ":ttl": .n(now + RefreshTokenRecord.revokedVisibility)]
        var update = "SET #status = :revoked, #ttl = :ttl"
        if let reason {
            update += ", endedReason = if_not_exists(endedReason, :reason)"
            values[":reason"] = .s(reason.rawValue)
        }
        return .update(key: key, update: update, condition: condition,
                       attributes: ExpressionAttributes(names: ["#status": "status", "#ttl": "ttl"], values: values))
    }

    /// Marks one token REVOKED (its session is gone), so later attempts answer without touching
    /// the session again. Best effort: the session's state already stops the token.
    func markRevoked(_ record: RefreshTokenRecord, now: Int64) {
        _ = try? table.transact([AccountStore.revoke(record.key, now: now, condition: "attribute_exists(PK)")])
    }

    /// Revokes a session after reuse of one of its tokens: its place in the profile (bumping the
    /// version, so every refresh of it fails its condition), the session item and its tokens.
    func revokeSession(userID: String, sessionID: String, now: Int64, reason: SessionEndReason) throws(AuthError) {
        // The gate cannot fail here: the entry commits with it, so reuse lists its session too.
        let gate = TransactWriteAction.update(
            key: Keys.profileKey(userID), update: "REMOVE activeSessions.#sid SET #version = #version + :one",
            condition: "attribute_exists(PK)",
            attributes: ExpressionAttributes(names: ["#sid": sessionID, "#version": "version"], values: [":one": .n(1)]))
        _ = try revokeSessions(userID: userID, [sessionID], gate: gate, now: now, reason: reason)
    }

    /// Marks sessions and every token of their families REVOKED. `gate` is the profile write
    /// that takes them out of `activeSessions` (nil when the caller's own transaction did): it
    /// runs in the first transaction, with the sessions, so from that commit on no refresh of
    /// them can succeed (each rotation checks the profile and the session), and a refresh racing
    /// the sign-out never yields a token that outlives it. DynamoDB takes 100 actions per
    /// transaction; what follows the first is bookkeeping that makes the items tell the truth.
    /// False when the gate's condition failed (nothing was written).
    ///
    /// With a gate, the sessions' revocation-list entries ride in its transaction (ahead of the
    /// bookkeeping), so the commit that ends the sessions is the one that tells access tokens;
    /// without one (bookkeeping after a commit that listed them already) nothing is listed again.
    func revokeSessions(userID: String, _ sessionIDs: [String], gate: TransactWriteAction?, now: Int64,
                        reason: SessionEndReason) throws(AuthError) -> Bool {
        guard !sessionIDs.isEmpty || gate != nil else { return true }
        let tokens = try unrevokedRefreshTokenKeys(of: userID, families: Set(sessionIDs))
        var revocations = gate == nil ? [] : self.revocations.entries(sessionIDs: sessionIDs, now: now)
        // Conditional on existing, so that bookkeeping racing an account deletion never
        // recreates an item the deletion removed.
        revocations += sessionIDs.map { AccountStore.revoke(Keys.session(userID, $0), now: now, condition: "attribute_exists(PK)", reason: reason) }
        revocations += tokens.map { AccountStore.revoke($0, now: now, condition: "attribute_exists(PK)") }
        var plan = TransactionPlan<RevocationStep>()
        if let gate { plan.add(.gate, gate) }
        var start = 0
        repeat {
            let end = min(revocations.count, start + AccountStore.transactionLimit - plan.actions.count)
            plan.add(Array(revocations[start..<end]))
            if let cancellation = try table.run(plan) {
                if cancellation.failed(.gate) { return false }
                // An item vanished meanwhile (a deletion): revoke the others one by one.
                for action in plan.actions { _ = try? table.transact([action]) }
            }
            plan = TransactionPlan()
            start = end
        } while start < revocations.count
        return true
    }

    private enum RevocationStep: Equatable { case gate }
}
