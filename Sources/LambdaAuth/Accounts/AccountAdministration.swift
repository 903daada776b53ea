import Logging

/// What an operator does to accounts outside any request (`authctl users`, `authctl credentials`,
/// the bench's large revocation lists), through the same store and deletion the flows use.
public struct AccountAdministration: Sendable {
    let store: AccountStore
    let apple: AppleAccountTokens
    let retry: OptimisticRetry
    let clock: any WallClock
    let random: any RandomSource

    /// What an operator needs to see of a user (`authctl users show`): the `user` object of the
    /// responses, its sessions with their state, its refresh tokens counted by status, and
    /// whether a deletion is pending. nil when there is no such user (leftovers of an interrupted
    /// deletion are counted under `leftoverItems`).
    public func describeUser(_ userID: String) throws(AuthError) -> JSONValue? {
        guard let user = try store.user(userID) else {
            let leftovers = try store.deletableItems(of: userID)
            return leftovers.isEmpty ? nil : ["id": .string(userID), "leftoverItems": .number(Int64(leftovers.count))]
        }
        let sessions = try store.sessions(of: userID).sorted { $0.createdAt < $1.createdAt }.map { session -> JSONValue in
            ["id": .string(session.sessionID), "device": .object(session.device.mapValues(JSONValue.string)),
             "createdAt": .string(Timestamps.format(session.createdAt)), "lastActiveAt": .string(Timestamps.format(session.lastActiveAt)),
             "status": .string(user.profile.activeSessions[session.sessionID] != nil ? session.status.rawValue : SessionStatus.revoked.rawValue)]
        }
        var tokens: [String: Int64] = [:]
        for record in try store.refreshTokens(of: userID) { tokens[record.status.rawValue, default: 0] += 1 }
        return ["user": user.json, "sessions": .array(sessions), "refreshTokens": .object(tokens.mapValues { .number($0) }),
                "deletionRequestedAt": user.profile.deletionRequestedAt.map { .string(Timestamps.format($0)) } ?? .null]
    }

    /// What an operator sees of a user's passkeys (`authctl users passkeys`): each passkey as
    /// `list` shows it, with its transports. nil when there is no such user.
    public func describePasskeys(_ userID: String) throws(AuthError) -> JSONValue? {
        guard try store.user(userID) != nil else { return nil }
        let passkeys = try PasskeyStore(table: store.table).passkeys(of: userID).map { passkey -> JSONValue in
            guard case .object(var fields) = passkey.json else { return passkey.json }
            fields["transports"] = .array(passkey.transports.map(JSONValue.string))
            return .object(fields)
        }
        return ["userId": .string(userID), "passkeys": .array(passkeys)]
    }

    /// `authctl users set-metadata`: the user object after the change, or nil for no such user.
    public func setAppMetadata(_ userID: String, json text: String) throws(AuthError) -> JSONValue? {
        let metadata = try AppMetadata.parse(text)
        return try store.setAppMetadata(metadata, userID: userID, retry: retry, now: clock.nowSeconds)?.json
    }

    /// The same deletion `delete-account` runs, for operators (`authctl users delete`): marks the
    /// user (no caller, no re-authentication) and deletes every item. False when there is no such user.
    /// Apple's stored token is revoked first, as delete-account does (PROVIDER_UNAVAILABLE: nothing deleted).
    public func deleteUser(_ userID: String, logger: Logger) throws(AuthError) -> Bool {
        let deletion = AccountDeletion(store: store, retry: retry)
        return try deletion.deleteWithoutCaller(userID: userID, now: clock.nowSeconds, logger: logger) { () throws(AuthError) in
            try apple.revokeStored(userID: userID, logger: logger)
        }
    }

    /// The development credentials secret kept in the local store, if one was created; never creates one.
    public func existingDevCredentialsSecret() throws(AuthError) -> String? {
        try DevSecrets.credentialsSecret(in: store.table, create: false, now: clock.nowSeconds, random: random,
                                         logger: Logger.jsonLines(level: .error))
    }

    /// Lists sessions as revoked now, 100 to a transaction, without ending anything: for the
    /// bench's large lists only.
    package func listRevokedSessions(_ sessionIDs: [String]) throws(AuthError) {
        let entries = store.revocations.entries(sessionIDs: sessionIDs, now: clock.nowSeconds)
        var start = 0
        while start < entries.count {
            let end = min(entries.count, start + AccountStore.transactionLimit)
            if try store.table.transact(Array(entries[start..<end])) != nil { throw .internalError("listing revocations was cancelled") }
            start = end
        }
    }
}
