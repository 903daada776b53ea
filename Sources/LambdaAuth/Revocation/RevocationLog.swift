/// The table's record of revocations that access tokens already issued must hear of (contract
/// section 20): each revocation adds its entries to its own transaction, so no session ends
/// without being listed, and none is listed that did not end. An entry lives as long as a token
/// of its session can still be valid (`retention` = AUTH_ACCESS_TOKEN_TTL + AUTH_CLOCK_SKEW),
/// then its `ttl` drops it (and the read stops looking at it before the sweep does).
struct RevocationLog: Sendable {
    let table: any Table
    let retention: Int64

    /// The puts that list `sessionIDs` (and a deleted `userID`) as revoked at `now`. Unconditional:
    /// listing a session twice is harmless, and the revocation's own conditions decide.
    func entries(sessionIDs: [String], deletedUserID: String? = nil, now: Int64) -> [TransactWriteAction] {
        var actions = sessionIDs.map { sessionID in
            TransactWriteAction.put(item(Keys.revokedSession(sessionID, at: now), ["sessionId": .s(sessionID)], now: now))
        }
        if let deletedUserID {
            actions.append(.put(item(Keys.revokedUser(deletedUserID, at: now), ["userId": .s(deletedUserID)], now: now)))
        }
        return actions
    }

    private func item(_ key: TableKey, _ attributes: Item, now: Int64) -> Item {
        var item = attributes
        item["PK"] = .s(key.pk)
        item["SK"] = .s(key.sk)
        item["revokedAt"] = .n(now)
        item["ttl"] = .n(now + retention)
        return item
    }

    /// Every session and user revoked within `retention` of `now`: a Query of each hour partition
    /// the window touches (two while the retention is under an hour), from the window's start on.
    /// Bounded by the revocations of that window, not by the number of users or sessions.
    func read(now: Int64) throws(AuthError) -> RevocationList {
        let from = now - retention
        var list = RevocationList(issuedAt: now)
        var bucketStart = max(0, from) / Keys.revocationBucketSeconds * Keys.revocationBucketSeconds
        while bucketStart <= now {
            let items = try table.queryAll(QueryRequest(
                keyCondition: "PK = :pk AND SK >= :from",
                attributes: ExpressionAttributes(values: [":pk": .s(Keys.revocationBucket(bucketStart)), ":from": .s(Keys.revocationTime(from))])))
            for item in items {
                if let sessionID = item["sessionId"]?.stringValue { list.sessionIDs.insert(sessionID) }
                if let userID = item["userId"]?.stringValue { list.userIDs.insert(userID) }
            }
            bucketStart += Keys.revocationBucketSeconds
        }
        return list
    }
}

/// The list as a resident process keeps it: read from the table at most once per `maximumAge`
/// (5 s), concurrent requests sharing one read; when the table cannot be read, the last list
/// serves for 60 s past its read, then the read's error is thrown (the `authorizer` fails rather
/// than let a sign-out go unheard). `PeriodicValue` is that policy, the verifier's feed's too.
public final class RevocationCache: Sendable {
    let log: RevocationLog
    private let list: PeriodicValue<RevocationList>

    init(log: RevocationLog, clock: any WallClock, maximumAge: Double = Double(RevocationDocument.maximumAge)) {
        self.log = log
        list = PeriodicValue(maximumAge: maximumAge, lastGoodAllowance: RevocationFeed.lastGoodAllowance, clock: clock)
    }

    /// Table reads so far (the promise is none per request: tests and the bench count them).
    public var reads: Int { list.reads }

    public func current() throws(AuthError) -> RevocationList {
        try list.current { (_, now) throws(AuthError) in try log.read(now: Int64(now.rounded(.down))) }
    }
}

/// `GET /.well-known/revocations`: the list read from the table (one bounded read, every request:
/// caching is the `max-age` of 5 s, so a revocation is out within that), signed with the key that
/// signs access tokens.
struct RevocationPublisher: Sendable {
    let log: RevocationLog
    let signer: @Sendable () throws(AuthError) -> AccessTokenIssuer
    let clock: any WallClock

    func document() throws(AuthError) -> String {
        let issuer = try signer()
        return try issuer.sign(list: try log.read(now: clock.nowSeconds))
    }
}

extension AccessTokenIssuer {
    /// The list as `RevocationDocument` says: `typ: revocations+jwt`, the signing key's `kid`.
    public func sign(list: RevocationList) throws(AuthError) -> String {
        do {
            return try JWSSigner.sign(header: ["typ": .string(RevocationDocument.type)],
                                      payload: RevocationDocument.payload(list, issuer: issuer), keyID: key.keyID, key: key.signingKey)
        } catch {
            throw .internalError("\(key.algorithm.rawValue) signing of the revocation list failed: \(error)")
        }
    }
}
