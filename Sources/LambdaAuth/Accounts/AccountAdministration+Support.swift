import Logging

/// What support staff do to one user beyond `describeUser` (`authctl users find|list|revoke-session|
/// delete-passkey`, and `authctl console`, which calls these same functions): each change goes
/// through the store writes the user's own requests make, so it is revoked, evented and logged
/// as theirs would be.
extension AccountAdministration {
    /// One page of `listUsers`: `next` is the cursor of the following page (nil: the last).
    public struct UserPage: Sendable {
        public var users: [JSONValue]
        public var next: String?
    }

    /// The longest query `findUsers` looks up: an id, an address or a subject is far shorter.
    static let longestQuery = 512

    /// Users the text names: the user with that id, the owner of that verified email address,
    /// the user a built-in provider's identity with that subject is linked to, or, as
    /// `provider:subject`, a configured provider's. Each found user once, as `listUsers` shows it.
    public func findUsers(_ query: String) throws(AuthError) -> [JSONValue] {
        let text = query.trimmingSpaceCharacters()
        guard !text.isEmpty, text.utf8.count <= AccountAdministration.longestQuery else { return [] }
        var userIDs: [String] = []
        func add(_ userID: String?) {
            if let userID, !userIDs.contains(userID) { userIDs.append(userID) }
        }
        add(text)
        if let key = EmailKey.of(text) { add(try store.emailOwner(key)) }
        for provider in ProviderName.allCases { add(try store.linkedUserID(provider, text)) }
        if let colon = text.firstIndex(of: ":"), let provider = ProviderName(rawValue: String(text[..<colon])) {
            add(try store.linkedUserID(provider, String(text[text.index(after: colon)...])))
        }
        var found: [JSONValue] = []
        for userID in userIDs {
            if let user = try store.user(userID) { found.append(AccountAdministration.summary(user.profile)) }
        }
        return found
    }

    /// Every user, `limit` at a time, in the store's scan order (no order a person would choose,
    /// but the only one DynamoDB gives without an index of all users). `after`: a page's `next`.
    public func listUsers(limit: Int, after cursor: String?) throws(AuthError) -> UserPage {
        let wanted = max(1, min(limit, 100))
        var start: Item? = cursor.map { Keys.profileKey($0).item }
        var users: [JSONValue] = []
        repeat {
            let page: QueryPage
            do {
                page = try store.table.scan(limit: 200, exclusiveStartKey: start)
            } catch {
                throw error.authError
            }
            for item in page.items {
                guard let profile = UserProfile(item: item) else { continue }
                users.append(AccountAdministration.summary(profile))
                // Resuming just past this profile's key sees every item after it, whatever the page.
                if users.count == wanted { return UserPage(users: users, next: profile.userID) }
            }
            start = page.lastEvaluatedKey
        } while start != nil
        return UserPage(users: users, next: nil)
    }

    /// Whether the user has a second factor enrolled (nil: no such user), for a page that offers its reset.
    public func hasSecondFactor(_ userID: String) throws(AuthError) -> Bool? {
        guard let user = try store.user(userID) else { return nil }
        return user.secondFactor.factor != nil
    }

    /// A user as a list shows it: who, and how active.
    static func summary(_ profile: UserProfile) -> JSONValue {
        ["id": .string(profile.userID), "email": profile.email.map(JSONValue.string) ?? .null,
         "displayName": profile.displayName.map(JSONValue.string) ?? .null, "isGuest": .bool(profile.isGuest),
         "createdAt": .string(Timestamps.format(profile.createdAt)), "lastSignInAt": .string(Timestamps.format(profile.lastSignInAt)),
         "activeSessions": .number(Int64(profile.activeSessions.count))]
    }

    /// Ends one session as the user's own `DELETE /sessions/{id}` does (its refresh tokens
    /// revoked, the revocation listed for the authorizer, `session.ended` with reason `revoked`).
    /// nil when there is no such user, false when the session is not one of its active ones.
    public func revokeSession(_ userID: String, sessionID: String, logger: Logger) throws(AuthError) -> Bool? {
        try retry.run("session revocation") { () throws(AuthError) -> Bool?? in
            guard let user = try store.user(userID) else { return .some(nil) }
            guard user.profile.activeSessions[sessionID] != nil else { return .some(false) }
            guard try store.revokeSessions(userID: userID, [sessionID], gate: AccountStore.activeSessionsGate(user, removing: [sessionID]),
                                           now: clock.nowSeconds, reason: .revoked) else { return nil }
            logger.notice("session revoked by an operator", metadata: ["userId": .string(userID), "sessionId": .string(sessionID)])
            return .some(true)
        }
    }

    /// Removes one passkey as the user's own deletion does (its identity unlinked, the user's
    /// other sessions untouched, `identity.unlinked` published); the user's last identity stays
    /// (LAST_IDENTITY). nil when there is no such user, false when it has no such passkey.
    public func deletePasskey(_ userID: String, passkeyID: String, logger: Logger) throws(AuthError) -> Bool? {
        try retry.run("passkey deletion") { () throws(AuthError) -> Bool?? in
            guard let user = try store.user(userID) else { return .some(nil) }
            guard let identity = user.identities.first(where: { $0.provider == .passkey && $0.subject.sameBytes(as: passkeyID) }) else {
                return .some(false)
            }
            guard user.identities.count > 1 else {
                throw AuthError(.lastIdentity, "this passkey is the user's last identity; delete the user instead")
            }
            switch try store.unlink(identity, from: user, callerSessionID: nil, now: clock.nowSeconds) {
            case .committed:
                logger.notice("passkey deleted by an operator", metadata: ["userId": .string(userID), "passkeyId": .string(passkeyID)])
                return .some(true)
            case .lostRace: return nil
            }
        }
    }
}
