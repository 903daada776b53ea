/// A user's PROFILE item, plus the bookkeeping the flows need to stay consistent under
/// concurrency: `identityCount` (unlink never removes the last identity) and `activeSessions`
/// (session id → last activity in epoch milliseconds, so that the session limit is enforced
/// atomically with a version; see `SessionActivity`).
struct UserProfile: Sendable {
    var userID: String
    var email: String?
    var emailVerified: Bool
    var displayName: String?
    var pictureURL: String?
    var createdAt: Int64
    var updatedAt: Int64
    var lastSignInAt: Int64
    var identityCount: Int64
    var activeSessions: [String: Int64]
    var version: Int64
    /// Set when an account deletion began: the account is gone for every flow, and whichever
    /// request meets it next (delete-account again, a sign-in) finishes the deletion.
    var deletionRequestedAt: Int64?
    /// A guest (contract section 9): no identity yet. Its items all vanish through `ttl` once it
    /// was inactive for AUTH_GUEST_TTL; `guestExpiresAt` is the PROFILE's `ttl`, the latest of them.
    var isGuest = false
    var guestExpiresAt: Int64?
    /// Operators' claims for the app's own authorization (contract section 17); empty: none.
    var appMetadata: [String: JSONValue] = [:]

    /// Whether a token of `sessionID` may still act for this user: the session is active and no
    /// deletion is under way.
    func admits(session sessionID: String) -> Bool {
        deletionRequestedAt == nil && activeSessions[sessionID] != nil
    }

    init(userID: String, email: String?, emailVerified: Bool, displayName: String?, pictureURL: String?, now: Int64) {
        self.userID = userID
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.pictureURL = pictureURL
        self.createdAt = now
        self.updatedAt = now
        self.lastSignInAt = now
        self.identityCount = 1
        self.activeSessions = [:]
        self.version = 0
    }

    init?(item: Item) {
        guard let userID = item["PK"]?.stringValue.flatMap(Keys.userID(partition:)), item["SK"]?.stringValue == Keys.profile else {
            return nil
        }
        self.userID = userID
        email = item["email"]?.stringValue
        emailVerified = item["emailVerified"]?.boolValue ?? false
        displayName = item["displayName"]?.stringValue
        pictureURL = item["pictureUrl"]?.stringValue
        createdAt = item["createdAt"].flatMap(Timestamps.parse) ?? 0
        updatedAt = item["updatedAt"].flatMap(Timestamps.parse) ?? createdAt
        lastSignInAt = item["lastSignInAt"].flatMap(Timestamps.parse) ?? createdAt
        identityCount = item["identityCount"]?.int64Value ?? 1
        var sessions: [String: Int64] = [:]
        for (sessionID, value) in item["activeSessions"]?.mapValue ?? [:] {
            sessions[sessionID] = SessionActivity.milliseconds(stored: value.int64Value ?? 0)
        }
        activeSessions = sessions
        version = item["version"]?.int64Value ?? 0
        deletionRequestedAt = item["deletionRequestedAt"].flatMap(Timestamps.parse)
        isGuest = item["isGuest"]?.boolValue ?? false
        guestExpiresAt = isGuest ? item["ttl"]?.int64Value : nil
        appMetadata = AppMetadata.read(item["appMetadata"]?.stringValue)
    }

    var item: Item {
        var item: Item = Keys.profileKey(userID).item
        item["email"] = email.map(AttributeValue.s) ?? .null
        item["emailVerified"] = .bool(emailVerified)
        item["displayName"] = displayName.map(AttributeValue.s) ?? .null
        item["pictureUrl"] = pictureURL.map(AttributeValue.s) ?? .null
        item["createdAt"] = .s(Timestamps.format(createdAt))
        item["updatedAt"] = .s(Timestamps.format(updatedAt))
        item["lastSignInAt"] = .s(Timestamps.format(lastSignInAt))
        item["identityCount"] = .n(identityCount)
        item["activeSessions"] = .m(activeSessions.mapValues { .n($0) })
        item["version"] = .n(version)
        if let deletionRequestedAt { item["deletionRequestedAt"] = .s(Timestamps.format(deletionRequestedAt)) }
        if isGuest {
            item["isGuest"] = .bool(true)
            if let guestExpiresAt { item["ttl"] = .n(guestExpiresAt) }
        }
        if let metadata = AppMetadata.stored(appMetadata) { item["appMetadata"] = .s(metadata) }
        return item
    }
}

/// One provider identity as the user's side of the link holds it.
struct LinkedIdentity: Sendable {
    var provider: ProviderName
    var subject: String
    var email: String?
    var linkedAt: Int64
    /// Apple's email-disabled / email-enabled notifications; nil until one arrives.
    var emailDeliverable: Bool?

    init(provider: ProviderName, subject: String, email: String?, linkedAt: Int64) {
        self.provider = provider
        self.subject = subject
        self.email = email
        self.linkedAt = linkedAt
    }

    init?(userSideItem item: Item) {
        guard let provider = item["SK"]?.stringValue.flatMap(Keys.identityProvider(sortKey:)),
              let subject = item["subject"]?.stringValue else { return nil }
        self.provider = provider
        self.subject = subject
        self.email = item["email"]?.stringValue
        self.linkedAt = item["linkedAt"].flatMap(Timestamps.parse) ?? 0
        self.emailDeliverable = item["emailDeliverable"]?.boolValue
    }

    func userSideItem(userID: String) -> Item {
        var item = Keys.userIdentity(userID, provider, subject: subject).item
        item["subject"] = .s(subject)
        item["email"] = email.map(AttributeValue.s) ?? .null
        item["linkedAt"] = .s(Timestamps.format(linkedAt))
        if let emailDeliverable { item["emailDeliverable"] = .bool(emailDeliverable) }
        return item
    }

    func linkItem(userID: String) -> Item {
        var item = Keys.identityLink(provider, subject).item
        item["userId"] = .s(userID)
        item["provider"] = .s(provider.rawValue)
        item["subject"] = .s(subject)
        item["email"] = email.map(AttributeValue.s) ?? .null
        item["linkedAt"] = .s(Timestamps.format(linkedAt))
        return item
    }
}

enum SessionStatus: String, Sendable {
    case active = "ACTIVE"
    case revoked = "REVOKED"
}

enum RefreshTokenStatus: String, Sendable {
    case active = "ACTIVE"
    case used = "USED"
    case revoked = "REVOKED"
}

/// A refresh token as stored: never the token itself, only `secretHash` (SHA-256 of its secret
/// part, checked in constant time) and `GSI1PK` (SHA-256 of the whole token, for operators and for
/// finding tokens issued before keyed tokens existed).
///
/// A family keeps two such items at most: its live token (ACTIVE) and the one it replaced (USED,
/// visible for the grace period only, carrying the nonce its successor's secret derives from).
/// Older generations leave no item: their reuse is recognised from the token itself (family and
/// generation) against the session item's `liveGeneration`.
struct RefreshTokenRecord: Sendable {
    var userID: String
    var tokenID: String
    var tokenHash: String
    /// nil on items written before keyed tokens: those are found and checked by `tokenHash`.
    var secretHash: String?
    var familyID: String
    /// nil on items written before families had generations (format-1 and older tokens).
    var generation: Int64?
    var status: RefreshTokenStatus
    var createdAt: Int64
    var expiresAt: Int64
    var usedAt: Int64?
    var replacedBy: String?
    /// On a USED item within the grace period: what its successor's secret derives from.
    var successorNonce: [UInt8]?
    /// A copy of the session's family key, so the rotation can tag the successor without reading
    /// the session (nil on items written before families had generations).
    var familyKey: RefreshFamilyKey?
    /// Copied from the session so that a refresh can answer `session.createdAt` without reading it.
    var sessionCreatedAt: Int64?
    /// The user as the response that issued this token showed it, so that a refresh needs no read
    /// of the user's items: its transaction checks that the profile still has this version.
    var user: UserSnapshot?
    /// A guest's token vanishes no later than the guest does (written, never read back).
    var guestExpiresAt: Int64?
    /// The family began with this release's tokens, so every token it has is an item named
    /// `REFRESH#<familyId>.<generation>`: revoking it reads those items alone (`Keys.familyTokenPrefix`),
    /// not the user's every token. False on families an earlier release began: one that moved
    /// to generations may still have tokens named otherwise.
    var familyBorn: Bool
    /// The session's `aal` and `amr` as of this token: its refresh's access token carries them,
    /// and its successor keeps them.
    var assurance = Assurance.unknown

    init(credential: RefreshTokenCredential, family: RefreshFamilyKey, familyBorn: Bool, createdAt: Int64, expiresAt: Int64,
         sessionCreatedAt: Int64, user: UserSnapshot) {
        self.familyKey = family
        self.familyBorn = familyBorn
        self.userID = credential.userID
        self.tokenID = credential.tokenID
        self.tokenHash = credential.tokenHash
        self.secretHash = credential.secretHash
        self.familyID = credential.familyID
        self.generation = credential.generation
        self.status = .active
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.sessionCreatedAt = sessionCreatedAt
        self.user = user
    }

    init?(item: Item) {
        guard let userID = item["PK"]?.stringValue.flatMap(Keys.userID(partition:)),
              let tokenID = item["SK"]?.stringValue.flatMap({ Keys.suffix(of: $0, after: Keys.refreshTokenPrefix) }),
              let tokenHash = item["GSI1PK"]?.stringValue.flatMap({ Keys.suffix(of: $0, after: Keys.tokenHashIndexPrefix) }),
              let familyID = item["familyId"]?.stringValue,
              let status = item["status"]?.stringValue.flatMap(RefreshTokenStatus.init(rawValue:)),
              let expiresAt = item["expiresAt"].flatMap(Timestamps.parse) else { return nil }
        self.userID = userID
        self.tokenID = tokenID
        self.tokenHash = tokenHash
        secretHash = item["secretHash"]?.stringValue
        self.familyID = familyID
        generation = item["generation"]?.int64Value
        self.status = status
        createdAt = item["createdAt"].flatMap(Timestamps.parse) ?? 0
        self.expiresAt = expiresAt
        usedAt = item["usedAt"].flatMap(Timestamps.parse)
        replacedBy = item["replacedBy"]?.stringValue
        successorNonce = item["successorNonce"]?.stringValue.flatMap(Base64.urlDecoded)
        familyKey = RefreshFamilyKey(familyID: familyID, stored: item["familyKey"])
        sessionCreatedAt = item["sessionCreatedAt"].flatMap(Timestamps.parse)
        user = UserSnapshot(item: item)
        familyBorn = RefreshTokenRecord.isFamilyBorn(item)
        assurance = Assurance(item: item)
    }

    static func isFamilyBorn(_ item: Item) -> Bool {
        if case .bool(true)? = item["familyBorn"] { return true }
        return false
    }

    var key: TableKey { Keys.refreshToken(userID, tokenID) }

    /// The new ACTIVE item. It stays visible a day past its expiry (`expiredVisibility`) so that a
    /// late refresh learns it expired instead of "unknown".
    var item: Item {
        var item = key.item
        item["GSI1PK"] = .s(Keys.tokenHashIndexKey(hash: tokenHash))
        item["GSI1SK"] = .s(Keys.tokenHashIndexSortKey)
        if let secretHash { item["secretHash"] = .s(secretHash) }
        item["familyId"] = .s(familyID)
        if let generation { item["generation"] = .n(generation) }
        if let familyKey { item["familyKey"] = familyKey.stored }
        item["userId"] = .s(userID)
        item["status"] = .s(status.rawValue)
        item["createdAt"] = .s(Timestamps.format(createdAt))
        item["expiresAt"] = .s(Timestamps.format(expiresAt))
        if let sessionCreatedAt { item["sessionCreatedAt"] = .s(Timestamps.format(sessionCreatedAt)) }
        if familyBorn { item["familyBorn"] = .bool(true) }
        if assurance != .unknown { assurance.store(in: &item) }
        user?.store(in: &item)
        item["ttl"] = .n(min(expiresAt + RefreshTokenRecord.expiredVisibility, guestExpiresAt ?? .max))
        return item
    }
}

/// The response's `user` object at one version of the PROFILE item. Every write that changes
/// what the object shows (profile fields, identities, a sign-in's lastSignInAt) bumps the
/// version, so a copy whose version still matches is exact.
struct UserSnapshot: Sendable {
    var json: JSONValue
    var profileVersion: Int64

    init(_ user: UserView) {
        json = user.json
        profileVersion = user.profile.version
    }

    init?(item: Item) {
        guard let text = item["userView"]?.stringValue, let version = item["profileVersion"]?.int64Value,
              let json = try? JSONValue.parse(text), json["id"] != nil else { return nil }
        self.json = json
        profileVersion = version
    }

    /// The user was a guest when this copy was made (the copy is exact while its version holds).
    var isGuest: Bool { json["isGuest"]?.boolValue == true }

    /// The operators' app metadata as of this copy: an operator's change bumps the version, so the
    /// next refresh reads the user again and carries it.
    var appMetadata: [String: JSONValue] { json["appMetadata"]?.objectValue ?? [:] }

    func store(in item: inout Item) {
        item["userView"] = .s(json.serialized())
        item["profileVersion"] = .n(profileVersion)
    }
}

/// A session: one signed-in device. Its id is also the refresh-token family id.
struct SessionRecord: Sendable {
    var userID: String
    var sessionID: String
    var device: [String: String]
    var createdAt: Int64
    var lastActiveAt: Int64
    var status: SessionStatus
    /// A guest's session vanishes no later than the guest does (written, never read back).
    var guestExpiresAt: Int64?
    /// The refresh-token family: its key (tags its tokens) and the generation of its one live
    /// token. nil on sessions whose family an earlier release wrote, until its next refresh.
    var familyKey: RefreshFamilyKey?
    var liveGeneration: Int64?
    /// How the session was proven (`aal`, `amr`), raised by a step-up.
    var assurance = Assurance.unknown

    init(userID: String, sessionID: String, device: [String: String], family: RefreshFamilyKey, now: Int64) {
        self.userID = userID
        self.sessionID = sessionID
        self.device = device
        self.createdAt = now
        self.lastActiveAt = now
        self.status = .active
        self.familyKey = family
        self.liveGeneration = 1
    }

    init?(item: Item) {
        guard let userID = item["PK"]?.stringValue.flatMap(Keys.userID(partition:)),
              let sessionID = item["SK"]?.stringValue.flatMap({ Keys.suffix(of: $0, after: Keys.sessionPrefix) }) else { return nil }
        self.userID = userID
        self.sessionID = sessionID
        var device: [String: String] = [:]
        for (name, value) in item["device"]?.mapValue ?? [:] {
            if let text = value.stringValue { device[name] = text }
        }
        self.device = device
        createdAt = item["createdAt"].flatMap(Timestamps.parse) ?? 0
        lastActiveAt = item["lastActiveAt"].flatMap(Timestamps.parse) ?? createdAt
        status = item["status"]?.stringValue.flatMap(SessionStatus.init(rawValue:)) ?? .active
        familyKey = RefreshFamilyKey(familyID: sessionID, stored: item["familyKey"])
        liveGeneration = item["liveGeneration"]?.int64Value
        assurance = Assurance(item: item)
    }

    /// The session lives as long as its live refresh token can refresh (`liveTokenExpiresAt`, which
    /// AUTH_SESSION_MAX_AGE and a guest's expiry already cap): after that it cannot be resumed.
    func item(liveTokenExpiresAt: Int64) -> Item {
        var item = Keys.session(userID, sessionID).item
        item["device"] = .m(device.mapValues(AttributeValue.s))
        item["createdAt"] = .s(Timestamps.format(createdAt))
        item["lastActiveAt"] = .s(Timestamps.format(lastActiveAt))
        item["status"] = .s(status.rawValue)
        if let familyKey { item["familyKey"] = familyKey.stored }
        if let liveGeneration { item["liveGeneration"] = .n(liveGeneration) }
        if assurance != .unknown { assurance.store(in: &item) }
        item["ttl"] = .n(min(liveTokenExpiresAt, guestExpiresAt ?? .max))
        return item
    }
}
