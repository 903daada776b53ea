/// `refresh`: rotate a refresh token within its family (= its session).
///
/// Rotation is one transaction: the old token ACTIVE → USED (conditional on still being ACTIVE),
/// the new token put, and the session touched conditional on being active, so that no token minted
/// by a refresh racing a revocation survives it. A USED token presented again within the grace
/// period gets a fresh token of the same family (concurrent refreshes from one device all
/// succeed); after it, the whole family is revoked.
public struct RefreshFlow: Sendable {
    let services: AuthServices

    public init(services: AuthServices) { self.services = services }

    public func handle(_ body: RequestBody, logger: Logger) throws(AuthError) -> InvocationResponse {
        let presented = try body.requiredString("refreshToken", maximumBytes: 1024)
        var record = try lookUp(presented)
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
            let refresh = NewRefreshToken(random: services.random)
            let tokens = try services.prepareTokens(userID: record.userID, sessionID: record.familyID, refresh: refresh, logger: logger)
            guard let user = try services.loadUser(record.userID) else { throw revoked(record, logger: logger) }
            let sessionCreatedAt = try sessionCreationTime(record)
            let newItem = services.refreshRecord(for: refresh, userID: record.userID, sessionID: record.familyID,
                                                 sessionCreatedAt: sessionCreatedAt)
            var actions: [TransactWriteAction] = []
            if record.status == .active {
                actions.append(.update(
                    key: record.key, update: "SET #status = :used, usedAt = :now, replacedBy = :next, #ttl = :ttl",
                    condition: "#status = :active",
                    attributes: ExpressionAttributes(
                        names: ["#status": "status", "#ttl": "ttl"],
                        values: [":used": .s("USED"), ":active": .s("ACTIVE"), ":now": .s(Timestamps.format(now)),
                                 ":next": newItem["SK"]!, ":ttl": .n(now + RefreshTokenRecord.usedVisibility)])))
            }
            actions.append(.put(newItem))
            actions.append(.update(
                key: Keys.profileKey(record.userID), update: "SET activeSessions.#sid = :now",
                condition: "attribute_exists(activeSessions.#sid)",
                attributes: ExpressionAttributes(names: ["#sid": record.familyID], values: [":now": .n(now)])))
            actions.append(.update(
                key: Keys.session(record.userID, record.familyID), update: "SET lastActiveAt = :now, #ttl = :ttl",
                condition: "#status = :active",
                attributes: ExpressionAttributes(
                    names: ["#status": "status", "#ttl": "ttl"],
                    values: [":now": .s(Timestamps.format(now)), ":active": .s("ACTIVE"),
                             ":ttl": .n(now + services.configuration.refreshTokenTTL)])))

            guard let reasons = try services.table.transact(actions) else {
                logger.info("refreshed", ["userId": .string(record.userID), "sessionId": .string(record.familyID),
                                          "grace": .bool(record.status == .used)])
                let issued = tokens.json(configuration: services.configuration)
                let session: JSONValue = ["id": .string(record.familyID), "createdAt": .string(Timestamps.format(sessionCreatedAt))]
                return InvocationResponse(body: ["user": user.json, "session": session, "tokens": issued.tokens,
                                                 "credentials": issued.credentials])
            }
            let sessionChecks = record.status == .active ? [2, 3] : [1, 2]
            if sessionChecks.contains(where: reasons.failed) { throw revoked(record, logger: logger) }
            if record.status == .active, reasons.failed(0) {
                // Another refresh rotated it first: apply the USED rule to what it wrote.
                guard let current = try services.table.read(record.key).flatMap(RefreshTokenRecord.init(item:)) else {
                    throw AuthError(.refreshTokenNotFound, "the refresh token is not known")
                }
                record = current
                continue
            }
            throw AuthError(.internal, "internal error", detail: "refresh cancelled: \(reasons.map(\.code))")
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "refresh gave up")
    }

    func lookUp(_ token: String) throws(AuthError) -> RefreshTokenRecord {
        let items = try services.table.queryAll(QueryRequest(
            indexName: "GSI1", keyCondition: "GSI1PK = :hash",
            attributes: ExpressionAttributes(values: [":hash": .s(Keys.refreshTokenIndex(hash: NewRefreshToken.hash(token)))])))
        guard let record = items.lazy.compactMap(RefreshTokenRecord.init(item:)).first else {
            throw AuthError(.refreshTokenNotFound, "the refresh token is not known")
        }
        return record
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
