/// What a committed item change means to the app's backend (contract section 22): the one place
/// that maps the table layout (Keys.swift, Records.swift, docs/table-layout.md) to events, one
/// function per item kind. Read from the change alone, so the DynamoDB Stream and the local
/// store's change log publish the same events; a kind that means nothing to the backend
/// (tokens, codes, counters, challenges, the link side of an identity) publishes nothing.
public enum ItemEvents {
    public struct Options: Sendable {
        /// `AUTH_ISSUER`: every event's `source`.
        public var source: String
        /// `AUTH_EVENTS_INCLUDE_EMAIL=1`: emails are personal data, left out unless asked for.
        public var includeEmail: Bool

        public init(source: String, includeEmail: Bool = false) {
            self.source = source
            self.includeEmail = includeEmail
        }
    }

    /// The event a change publishes, if any. It reads only `readAttributes(of:)`, so an event
    /// cannot say what the local store's change log does not keep.
    public static func event(for change: ItemChange, options: Options) -> AuthEvent? {
        guard let change = readable(change) else { return nil }
        guard let userID = Keys.userID(partition: change.key.pk) else { return nil }
        let made: (type: AuthEvent.EventType, data: [String: JSONValue])?
        if change.key.sk == Keys.profile {
            made = profile(change, userID: userID, options)
        } else if change.key.sk.hasPrefix(Keys.sessionPrefix) {
            made = session(change, userID: userID)
        } else if let provider = Keys.identityProvider(sortKey: change.key.sk) {
            made = identity(change, provider: provider, options)
        } else if change.key.sk == Keys.secondFactorSortKey {
            made = secondFactor(change)
        } else {
            made = nil
        }
        guard let made else { return nil }
        var data = made.data
        data["userId"] = .string(userID)
        return AuthEvent(id: change.derivedEventID, type: made.type, source: options.source, subject: userID,
                         time: change.committedAt, sequence: change.orderingKey, data: data)
    }

    // MARK: - What the events of an item kind read

    /// The attributes an item kind's events read; nil for a kind that publishes nothing. The
    /// local store's change log keeps these and nothing else (`LocalStoreSchema.lambdaAuth`), so no
    /// secret an item holds (a sealed provider token, a token's hash, a session's family key, a
    /// code's hash, a dev key) is copied into it: no event needs one, and `authctl keys reseal`
    /// and an account's erasure would otherwise have to find every copy there.
    static func readAttributes(of key: TableKey) -> Set<String>? {
        guard Keys.userID(partition: key.pk) != nil else { return nil }
        if key.sk == Keys.profile { return profileAttributes }
        if key.sk.hasPrefix(Keys.sessionPrefix) { return sessionAttributes }
        if Keys.identityProvider(sortKey: key.sk) != nil { return identityAttributes }
        if key.sk == Keys.secondFactorSortKey { return secondFactorAttributes }
        return nil
    }

    static let keyAttributes: Set<String> = ["PK", "SK"]
    static let profileAttributes = keyAttributes.union(userFields).union(["isGuest", "deletionRequestedAt"])
    static let sessionAttributes = keyAttributes.union(["status", "endedReason", "device"])
    static let identityAttributes = keyAttributes.union(["subject", "email"])
    /// Its status alone: the sealed secret and the codes' hashes never leave the item.
    static let secondFactorAttributes = keyAttributes.union(["status"])

    /// The change as its events see it: its images cut to `readAttributes(of:)`; nil when its kind
    /// publishes nothing or nothing it reads changed (as DynamoDB Streams gives no record for a
    /// write that changed nothing).
    static func readable(_ change: ItemChange) -> ItemChange? {
        readAttributes(of: change.key).flatMap(change.keeping)
    }

    // MARK: - One function per item kind

    /// The attributes of PROFILE that make the `user` object a backend sees (the rest is
    /// bookkeeping: versions, activity, session list, counters).
    static let userFields = ["email", "emailVerified", "displayName", "pictureUrl", "appMetadata"]

    /// `USER#<id>` / `PROFILE`.
    static func profile(_ change: ItemChange, userID: String, _ options: Options) -> (AuthEvent.EventType, [String: JSONValue])? {
        switch change.kind {
        case .insert:
            guard let new = change.newImage else { return nil }
            var data: [String: JSONValue] = ["isGuest": .bool(new["isGuest"]?.boolValue == true),
                                             "emailVerified": .bool(new["emailVerified"]?.boolValue == true)]
            if options.includeEmail, let email = new["email"]?.stringValue { data["email"] = .string(email) }
            return (.userCreated, data)
        case .remove:
            // A guest's expiry: DynamoDB's TTL sweep, not a request.
            return (.userDeleted, change.byTimeToLive ? ["reason": "expired"] : ["reason": "deleted"])
        case .modify:
            guard let old = change.oldImage, let new = change.newImage else { return nil }
            // A deletion under way: its last step removes the item and says user.deleted.
            if new["deletionRequestedAt"] != nil { return nil }
            if old["isGuest"]?.boolValue == true, new["isGuest"]?.boolValue != true { return (.guestUpgraded, [:]) }
            let changed = userFields.filter { name in !same(old[name], new[name]) }
            guard !changed.isEmpty else { return nil }
            var data: [String: JSONValue] = ["changed": .array(changed.map(JSONValue.string))]
            if options.includeEmail, changed.contains("email"), let email = new["email"]?.stringValue { data["email"] = .string(email) }
            return (.userUpdated, data)
        }
    }

    /// `USER#<id>` / `SESSION#<sessionId>`: started when it is put, ended when it leaves ACTIVE
    /// (the reason the revoking write recorded on it) or is deleted while active (an account deletion).
    static func session(_ change: ItemChange, userID: String) -> (AuthEvent.EventType, [String: JSONValue])? {
        guard let sessionID = Keys.suffix(of: change.key.sk, after: Keys.sessionPrefix) else { return nil }
        let active = SessionStatus.active.rawValue
        let wasActive = change.oldImage.map { ($0["status"]?.stringValue ?? active) == active } ?? false
        let isActive = change.newImage.map { ($0["status"]?.stringValue ?? active) == active } ?? false
        var data: [String: JSONValue] = ["sessionId": .string(sessionID)]
        switch change.kind {
        case .insert where isActive:
            if let platform = change.newImage?["device"]?.mapValue?["platform"]?.stringValue { data["platform"] = .string(platform) }
            return (.sessionStarted, data)
        case .modify where wasActive && !isActive:
            let reason = change.newImage?["endedReason"]?.stringValue.flatMap(SessionEndReason.init(rawValue:)) ?? .revoked
            data["reason"] = .string(reason.rawValue)
            return (.sessionEnded, data)
        case .remove where wasActive && !change.byTimeToLive:
            data["reason"] = .string(SessionEndReason.deleted.rawValue)
            return (.sessionEnded, data)
        default:
            return nil
        }
    }

    /// `USER#<id>` / `IDENTITY#<provider>` and `IDENTITY#passkey#<passkeyId>`: the user's side of
    /// a link (the `IDENTITY#…`/`LINK` side is the same change and publishes nothing).
    static func identity(_ change: ItemChange, provider: ProviderName, _ options: Options) -> (AuthEvent.EventType, [String: JSONValue])? {
        guard change.kind != .modify, let image = change.newImage ?? change.oldImage,
              let subject = image["subject"]?.stringValue else { return nil }
        if provider == .passkey {
            return (change.kind == .insert ? .passkeyRegistered : .passkeyDeleted, ["passkeyId": .string(subject)])
        }
        var data: [String: JSONValue] = ["provider": .string(provider.rawValue)]
        // The email provider's subject is the address itself.
        if provider != .email || options.includeEmail { data["subject"] = .string(subject) }
        if options.includeEmail, let email = image["email"]?.stringValue { data["email"] = .string(email) }
        return (change.kind == .insert ? .identityLinked : .identityUnlinked, data)
    }

    /// `USER#<id>` / `MFA#TOTP`: enrolled when it becomes active (a pending enrolment means
    /// nothing yet), removed when an active one goes (`totp-remove`, `authctl users mfa-reset`).
    static func secondFactor(_ change: ItemChange) -> (AuthEvent.EventType, [String: JSONValue])? {
        let active = SecondFactorRecord.Status.active.rawValue
        let wasActive = change.oldImage?["status"]?.stringValue == active
        let isActive = change.newImage?["status"]?.stringValue == active
        if isActive, !wasActive { return (.mfaEnrolled, ["factor": "totp"]) }
        if wasActive, !isActive { return (.mfaRemoved, ["factor": "totp"]) }
        return nil
    }

    /// Absent and NULL say the same (no display name).
    static func same(_ a: AttributeValue?, _ b: AttributeValue?) -> Bool {
        (a ?? .null) == (b ?? .null)
    }
}

/// Why a session ended, recorded on the SESSION item (`endedReason`) by the write that ends it,
/// so that the change alone tells it.
public enum SessionEndReason: String, Sendable {
    case signout, revoked, evicted, reuse, deleted
}

/// One event for the app's backend: a CloudEvents 1.0 structured JSON object.
public struct AuthEvent: Sendable, Equatable {
    public enum EventType: String, Sendable, CaseIterable {
        case userCreated = "user.created"
        case userUpdated = "user.updated"
        case userDeleted = "user.deleted"
        case identityLinked = "identity.linked"
        case identityUnlinked = "identity.unlinked"
        case guestUpgraded = "guest.upgraded"
        case sessionStarted = "session.started"
        case sessionEnded = "session.ended"
        case passkeyRegistered = "passkey.registered"
        case passkeyDeleted = "passkey.deleted"
        case mfaEnrolled = "mfa.enrolled"
        case mfaRemoved = "mfa.removed"
    }

    public var id: String
    public var type: EventType
    public var source: String
    /// The user id.
    public var subject: String
    /// Epoch milliseconds of the commit.
    public var time: Int64
    /// CloudEvents' `sequence` extension: orders one user's events (the stream's order).
    public var sequence: String
    public var data: [String: JSONValue]

    public var json: JSONValue {
        [
            "specversion": "1.0", "id": .string(id), "type": .string(type.rawValue), "source": .string(source),
            "subject": .string(subject), "time": .string(AuthEvent.format(milliseconds: time)),
            "datacontenttype": "application/json", "sequence": .string(sequence), "data": .object(data),
        ]
    }

    /// RFC 3339 with milliseconds, UTC.
    static func format(milliseconds: Int64) -> String {
        let seconds = Timestamps.format(milliseconds / 1000)
        guard seconds.hasSuffix("Z") else { return seconds }
        let fraction = String(String(1000 + milliseconds % 1000).dropFirst())
        return String(seconds.dropLast()) + "." + fraction + "Z"
    }
}
