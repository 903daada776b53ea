/// `refresh`: rotate a refresh token within its family (= its session).
///
/// Two DynamoDB requests in the common case: one strongly consistent GetItem of the token's item
/// (the token carries its key) and one transaction: the old token ACTIVE → USED (conditional on
/// still being ACTIVE), the new token put, the session touched conditional on being active (so no
/// token minted by a refresh racing a revocation survives it), and the profile conditional on the
/// version of the user copy the old token carries (so that copy is exact and the user's items need
/// no read). A USED token presented again within the grace period gets a fresh token of the same
/// family (concurrent refreshes from one device all succeed); after it, the whole family is
/// revoked. Access token and credentials are minted once, after the rotation commits.
public struct RefreshFlow: Sendable {
    let services: AuthServices

    public init(services: AuthServices) { self.services = services }

    enum Step: Hashable { case retireOld, profile, session }

    public func handle(_ body: RequestBody, logger: Logger) throws(AuthError) -> InvocationResponse {
        let presented = try body.requiredString("refreshToken", maximumBytes: 1024)
        var record = try lookUp(presented)
        var user = record.user
        for _ in 0..<8 {
            let now = services.clock.nowSeconds
            if record.status == .revoked {
                throw AuthError(.refreshTokenRevoked, "the refresh token was revoked")
            }
            if record.expiresAt <= now {
                throw AuthError(.refreshTokenExpired, "the refresh token expired at \(ISO8601.format(epochSeconds: record.expiresAt))")
            }
            if record.status == .used {
                let usedAt = record.usedAt ?? 0
                guard now - usedAt <= services.configuration.refreshGrace else {
                    try revokeFamily(of: record, logger: logger)
                    throw AuthError(.refreshTokenReused, "the refresh token was already used; the session was signed out")
                }
            }
            if user == nil { user = try currentUser(of: record) }
            guard let snapshot = user else { throw revoked(record, logger: logger) }
            let sessionCreatedAt = try sessionCreationTime(record)
            let refresh = RefreshTokenCredential(userID: record.userID, random: services.random)
            let newItem = services.refreshRecord(for: refresh, sessionID: record.familyID, sessionCreatedAt: sessionCreatedAt,
                                                 user: snapshot)
            var plan = TransactionPlan<Step>()
            if record.status == .active {
                plan.add(.retireOld, .update(
                    key: record.key, update: "SET #status = :used, usedAt = :now, replacedBy = :next, #ttl = :ttl",
                    condition: "#status = :active",
                    attributes: ExpressionAttributes(
                        names: ["#status": "status", "#ttl": "ttl"],
                        values: [":used": .s("USED"), ":active": .s("ACTIVE"), ":now": .s(Timestamps.format(now)),
                                 ":next": newItem["SK"]!, ":ttl": .n(now + RefreshTokenRecord.usedVisibility)])))
            }
            plan.add([.put(newItem)])
            plan.add(.profile, .update(
                key: Keys.profileKey(record.userID), update: "SET activeSessions.#sid = :now",
                condition: "attribute_exists(activeSessions.#sid) AND #version = :version",
                attributes: ExpressionAttributes(names: ["#sid": record.familyID, "#version": "version"],
                                                 values: [":now": .n(now), ":version": .n(snapshot.profileVersion)])))
            plan.add(.session, .update(
                key: Keys.session(record.userID, record.familyID), update: "SET lastActiveAt = :now, #ttl = :ttl",
                condition: "#status = :active",
                attributes: ExpressionAttributes(
                    names: ["#status": "status", "#ttl": "ttl"],
                    values: [":now": .s(Timestamps.format(now)), ":active": .s("ACTIVE"),
                             ":ttl": .n(now + services.configuration.refreshTokenTTL)])))

            guard let cancellation = try services.table.run(plan) else {
                logger.info("refreshed", ["userId": .string(record.userID), "sessionId": .string(record.familyID),
                                          "grace": .bool(record.status == .used)])
                let tokens = try services.issueTokens(userID: record.userID, sessionID: record.familyID, refresh: refresh, logger: logger)
                let issued = tokens.json(configuration: services.configuration)
                let session: JSONValue = ["id": .string(record.familyID), "createdAt": .string(Timestamps.format(sessionCreatedAt))]
                return InvocationResponse(body: ["user": snapshot.json, "session": session, "tokens": issued.tokens,
                                                 "credentials": issued.credentials])
            }
            if cancellation.failed(.session) { throw revoked(record, logger: logger) }
            var understood = false
            if cancellation.failed(.profile) {
                // The user changed since this token was issued, or the session left the profile:
                // the fresh read decides (nil: signed out).
                user = nil
                understood = true
            }
            if cancellation.failed(.retireOld) {
                // Another refresh rotated it first: apply the USED rule to what it wrote.
                guard let current = try services.table.read(record.key).flatMap(RefreshTokenRecord.init(item:)) else {
                    throw AuthError(.refreshTokenNotFound, "the refresh token is not known")
                }
                record = current
                understood = true
            }
            guard understood else {
                throw AuthError(.internal, "internal error", detail: "refresh cancelled: \(cancellation.codes)")
            }
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "refresh gave up")
    }

    /// The token's item, read strongly consistent through the key the token carries; its secret
    /// is checked against the stored hash in constant time. A token of the earlier, unkeyed format
    /// is found once through GSI1 and then re-read from the base table, so what decides the
    /// rotation is never an index's possibly stale copy.
    func lookUp(_ token: String) throws(AuthError) -> RefreshTokenRecord {
        let notFound = AuthError(.refreshTokenNotFound, "the refresh token is not known")
        switch RefreshTokenCredential.parse(token) {
        case .unknown:
            throw notFound
        case .keyed(let credential):
            guard let record = try services.table.read(Keys.refreshToken(credential.userID, credential.tokenID))
                    .flatMap(RefreshTokenRecord.init(item:)),
                  let expected = record.secretHash, constantTimeEqual(expected.utf8, credential.secretHash.utf8) else {
                throw notFound
            }
            return record
        case .legacy(let tokenHash):
            let items = try services.table.queryAll(QueryRequest(
                indexName: "GSI1", keyCondition: "GSI1PK = :hash",
                attributes: ExpressionAttributes(values: [":hash": .s(Keys.refreshTokenIndex(hash: tokenHash))])))
            guard let indexed = items.lazy.compactMap(RefreshTokenRecord.init(item:)).first,
                  let record = try services.table.read(indexed.key).flatMap(RefreshTokenRecord.init(item:)),
                  record.secretHash == nil, constantTimeEqual(record.tokenHash.utf8, tokenHash.utf8) else {
                throw notFound
            }
            return record
        }
    }

    /// The user as the profile shows it now, or nil when the token's session is no longer one of
    /// its active sessions (or the user is gone).
    func currentUser(of record: RefreshTokenRecord) throws(AuthError) -> UserSnapshot? {
        guard let user = try services.loadUser(record.userID), user.profile.activeSessions[record.familyID] != nil else {
            return nil
        }
        return UserSnapshot(user)
    }

    func sessionCreationTime(_ record: RefreshTokenRecord) throws(AuthError) -> Int64 {
        if let stored = record.sessionCreatedAt { return stored }
        return try services.table.read(Keys.session(record.userID, record.familyID))?["createdAt"].flatMap(Timestamps.parse)
            ?? record.createdAt
    }

    /// The session is gone or revoked: the token is dead too. Marked REVOKED so later attempts
    /// answer without touching the session again.
    func revoked(_ record: RefreshTokenRecord, logger: Logger) -> AuthError {
        let now = services.clock.nowSeconds
        _ = try? services.table.transact([.update(
            key: record.key, update: "SET #status = :revoked, #ttl = :ttl", condition: "attribute_exists(PK)",
            attributes: ExpressionAttributes(names: ["#status": "status", "#ttl": "ttl"],
                                             values: [":revoked": .s("REVOKED"), ":ttl": .n(now + RefreshTokenRecord.revokedVisibility)]))])
        logger.info("refresh refused: session revoked", ["userId": .string(record.userID), "sessionId": .string(record.familyID)])
        return AuthError(.refreshTokenRevoked, "the refresh token was revoked")
    }

    /// Reuse after the grace period: the token leaked or a client misbehaves. Revoke every token of
    /// the family and the session.
    func revokeFamily(of record: RefreshTokenRecord, logger: Logger) throws(AuthError) {
        logger.warning("refresh token reuse detected: revoking the session and its token family",
                       ["userId": .string(record.userID), "sessionId": .string(record.familyID)])
        try SessionRevocation(services: services).revoke(userID: record.userID, sessionID: record.familyID)
    }
}

/// Revokes a session and every token of its family.
struct SessionRevocation {
    let services: AuthServices

    func revoke(userID: String, sessionID: String) throws(AuthError) {
        let now = services.clock.nowSeconds
        let revokedValues: [String: AttributeValue] = [":revoked": .s("REVOKED"), ":ttl": .n(now + RefreshTokenRecord.revokedVisibility)]
        let names = ["#status": "status", "#ttl": "ttl"]
        let family = try services.table.queryAll(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :prefix)",
            attributes: ExpressionAttributes(values: [":pk": .s(Keys.user(userID)), ":prefix": .s("REFRESH#")])))
            .compactMap(RefreshTokenRecord.init(item:))
            .filter { $0.familyID == sessionID && $0.status != .revoked }
        var actions: [TransactWriteAction] = [
            .update(key: Keys.session(userID, sessionID), update: "SET #status = :revoked, #ttl = :ttl",
                    attributes: ExpressionAttributes(names: names, values: revokedValues)),
            .update(key: Keys.profileKey(userID), update: "REMOVE activeSessions.#sid SET #version = #version + :one",
                    condition: "attribute_exists(PK)",
                    attributes: ExpressionAttributes(names: ["#sid": sessionID, "#version": "version"], values: [":one": .n(1)])),
        ]
        actions += family.map { token in
            .update(key: token.key, update: "SET #status = :revoked, #ttl = :ttl",
                    attributes: ExpressionAttributes(names: names, values: revokedValues))
        }
        // DynamoDB takes 100 actions per transaction; the session goes first, so a partial run
        // still leaves every token of the family unusable.
        var start = 0
        while start < actions.count {
            let batch = Array(actions[start..<min(actions.count, start + 100)])
            if let reasons = try services.table.transact(batch) {
                throw AuthError(.internal, "internal error", detail: "revocation cancelled: \(reasons.map(\.code))")
            }
            start += 100
        }
    }
}
