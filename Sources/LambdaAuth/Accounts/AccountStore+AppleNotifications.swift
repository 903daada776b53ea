/// The writes of Apple's server-to-server notifications that are not sessions or deletions.
extension AccountStore {
    private enum DeliverabilityStep: Equatable { case profile, userSide }

    /// Marks the identity's email (un)deliverable, bumping the profile's version because the
    /// `user` object shows it (copies of older versions must not be served by a refresh).
    /// False when the user or the identity changed since `user` was read.
    func setEmailDeliverable(_ deliverable: Bool, of identity: LinkedIdentity, user: UserView, now: Int64) throws(AuthError) -> Bool {
        var plan = TransactionPlan<DeliverabilityStep>()
        plan.add(.profile, .update(
            key: Keys.profileKey(user.profile.userID), update: "SET updatedAt = :now, #version = #version + :one",
            condition: "#version = :read",
            attributes: ExpressionAttributes(names: ["#version": "version"],
                                             values: [":now": .s(Timestamps.format(now)), ":one": .n(1), ":read": .n(user.profile.version)])))
        plan.add(.userSide, .update(
            key: Keys.userIdentity(user.profile.userID, identity.provider, subject: identity.subject), update: "SET emailDeliverable = :deliverable",
            condition: "subject = :subject",
            attributes: ExpressionAttributes(values: [":deliverable": .bool(deliverable), ":subject": .s(identity.subject)])))
        guard let cancellation = try table.run(plan) else { return true }
        guard cancellation.failed(.profile) || cancellation.failed(.userSide) else {
            throw cancellation.unexpected("email deliverability change")
        }
        return false
    }

    /// A notification already handled (by its `jti`, or the whole payload's hash without one).
    func notificationSeen(_ key: TableKey) throws(AuthError) -> Bool {
        try table.read(key) != nil
    }

    /// Remembers a handled notification until `expiresAt`, after which it no longer verifies anyway.
    func recordNotification(_ key: TableKey, type: String, now: Int64, expiresAt: Int64) throws(AuthError) {
        var item = key.item
        item["type"] = .s(type)
        item["handledAt"] = .s(Timestamps.format(now))
        item["ttl"] = .n(expiresAt)
        do {
            try table.putItem(item)
        } catch {
            throw error.authError
        }
    }
}
