import Logging

/// One of Apple's server-to-server notifications, once its payload verified.
struct AppleNotification: Sendable {
    enum Kind: Sendable {
        /// consent-revoked, account-delete: sessions revoked, the Apple identity unlinked (the
        /// user deleted if it was their only identity).
        case revocation
        case email(deliverable: Bool)
        /// A type this version does not act on: acknowledged so that Apple stops resending it.
        case other
    }

    var type: String
    var subject: String
    var kind: Kind
    /// The replay record's identity: `jti`, or the payload itself without one.
    var replayID: String
    var expiresAt: Int64

    /// The `events` claim: a JSON object, or (as Apple sends it) a string holding one.
    init(claims: [String: JSONValue], payload: String, now: Int64) throws(AuthError) {
        var events = claims["events"]
        if case .string(let text)? = events {
            events = try? JSONValue.parse(text)
        }
        guard case .object(let event)? = events, let type = event["type"]?.stringValue, !type.isEmpty,
              let subject = event["sub"]?.stringValue, !subject.isEmpty else {
            throw AuthError(.malformedToken, "the notification's events claim has no type and sub")
        }
        self.type = type
        self.subject = subject
        switch type {
        case "consent-revoked", "account-delete", "account-deleted": kind = .revocation
        case "email-disabled": kind = .email(deliverable: false)
        case "email-enabled": kind = .email(deliverable: true)
        default: kind = .other
        }
        replayID = claims["jti"]?.stringValue.map { "jti:" + $0 } ?? "payload:" + payload
        expiresAt = max(claims["exp"]?.int64Value ?? now, now)
    }
}

/// `apple-notifications`: Apple tells us that a user revoked consent, deleted their Apple
/// account, or turned email forwarding off or on. Every answer but a payload that does not
/// verify (or a store failure, which Apple retries) is 200, so Apple stops resending.
struct AppleNotificationFlow: Sendable {
    let verifier: IDTokenVerifier
    let store: AccountStore
    let deletion: AccountDeletion
    let clock: any WallClock
    let retry: OptimisticRetry
    let clockSkew: Int64

    /// The notification's type, as the response names it.
    func handle(payload: String, logger: Logger) throws(AuthError) -> String {
        let claims = try verifier.verifiedClaims(payload, provider: .apple)
        let now = clock.nowSeconds
        let notification = try AppleNotification(claims: claims, payload: payload, now: now)
        let replayKey = Keys.appleNotification(id: notification.replayID)
        // Handling is idempotent anyway; the record keeps an old email-disabled resent after a
        // newer email-enabled from undoing it.
        if try store.notificationSeen(replayKey) {
            logger.info("Apple notification already handled", metadata: ["type": .string(notification.type)])
            return notification.type
        }
        guard let userID = try store.linkedUserID(.apple, notification.subject) else {
            logger.info("Apple notification for no known user", metadata: ["type": .string(notification.type)])
            try store.recordNotification(replayKey, type: notification.type, now: now, expiresAt: notification.expiresAt + clockSkew)
            return notification.type
        }
        switch notification.kind {
        case .revocation: try revokeAppleAccess(userID: userID, subject: notification.subject, logger: logger)
        case .email(let deliverable): try setEmailDeliverable(deliverable, userID: userID, subject: notification.subject)
        case .other: break
        }
        logger.info("Apple notification handled", metadata: ["type": .string(notification.type), "userId": .string(userID)])
        // Recorded after the work, so a failure half-way is redone when Apple resends.
        try store.recordNotification(replayKey, type: notification.type, now: now, expiresAt: notification.expiresAt + clockSkew)
        return notification.type
    }

    /// Every session revoked first, then the identity unlinked (with Apple's stored token, which
    /// Apple already invalidated): a failure between the two leaves the identity linked, so
    /// Apple's resend finds the user and finishes. Their only identity: the account is deleted.
    func revokeAppleAccess(userID: String, subject: String, logger: Logger) throws(AuthError) {
        let deletedAccount = try retry.run("Apple consent revocation") { () throws(AuthError) -> Bool? in
            guard let user = try store.user(userID) else { return false }
            guard user.profile.deletionRequestedAt == nil else { return true }
            guard let identity = user.identities.first(where: { $0.provider == .apple && $0.subject.sameBytes(as: subject) }) else { return false }
            if user.identities.count == 1 { return true }
            let now = clock.nowSeconds
            let sessions = user.profile.activeSessions.keys.sorted()
            if !sessions.isEmpty {
                guard try store.revokeSessions(userID: userID, sessions, gate: AccountStore.activeSessionsGate(user, removing: sessions),
                                               now: now, reason: .revoked) else { return nil }
                logger.info("signed out every session after an Apple notification",
                            metadata: ["userId": .string(userID), "revokedSessions": .number(Int64(sessions.count))])
                return nil  // the gate bumped the version: read again to unlink
            }
            switch try store.unlink(identity, from: user, callerSessionID: nil, now: now) {
            case .committed:
                logger.info("unlinked the Apple identity after an Apple notification", metadata: ["userId": .string(userID)])
                return false
            case .lostRace: return nil
            }
        }
        if deletedAccount {
            _ = try deletion.deleteWithoutCaller(userID: userID, now: clock.nowSeconds, logger: logger)
        }
    }

    func setEmailDeliverable(_ deliverable: Bool, userID: String, subject: String) throws(AuthError) {
        try retry.run("Apple email deliverability") { () throws(AuthError) -> Void? in
            guard let user = try store.user(userID), user.profile.deletionRequestedAt == nil,
                  let identity = user.identities.first(where: { $0.provider == .apple && $0.subject.sameBytes(as: subject) }) else { return () }
            if identity.emailDeliverable == deliverable { return () }
            return try store.setEmailDeliverable(deliverable, of: identity, user: user, now: clock.nowSeconds) ? () : nil
        }
    }
}
