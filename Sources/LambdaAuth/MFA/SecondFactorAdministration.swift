import Logging

extension AccountAdministration {
    /// `authctl users mfa-reset`: support's answer to a user who lost both the phone and the
    /// recovery codes. The factor and its pending sign-ins' challenges go; the change publishes
    /// `mfa.removed` as any removal does. nil when there is no such user, false when it had no factor.
    public func resetSecondFactor(_ userID: String, logger: Logger) throws(AuthError) -> Bool? {
        guard let user = try store.user(userID) else { return nil }
        guard user.secondFactor.factor != nil else { return false }
        try store.delete([Keys.secondFactor(userID)] + user.secondFactor.challenges.map { Keys.mfaChallenge(userID, hash: $0.hash) })
        logger.notice("second factor reset by an operator", metadata: ["userId": .string(userID)])
        return true
    }
}

/// `authctl keys reseal`'s second-factor half: every TOTP secret an older data key sealed is
/// sealed again under the first key of AUTH_DATA_KEYS, with the same all-or-nothing intent as
/// `ProviderTokenReseal` (which runs after it and erases the old copies from the store's files).
public enum SecondFactorReseal {
    public static func run(table: any Table, keys: DataKeys) throws(AuthError) -> ProviderTokenReseal.Outcome {
        var stale: [(item: Item, factor: SecondFactorRecord, plaintext: String)] = []
        var unopenable: [String] = []
        var outcome = ProviderTokenReseal.Outcome(resealed: 0, alreadyCurrent: 0)
        var start: Item?
        do {
            repeat {
                let page = try table.scan(limit: nil, exclusiveStartKey: start)
                for item in page.items {
                    guard let factor = SecondFactorRecord(item: item) else { continue }
                    guard let opened = keys.opened(factor.sealedSecret, context: SecondFactorRecord.sealingContext(userID: factor.userID)) else {
                        unopenable.append(factor.userID)
                        continue
                    }
                    if opened.isUnderFirstKey { outcome.alreadyCurrent += 1 } else { stale.append((item, factor, opened.plaintext)) }
                }
                start = page.lastEvaluatedKey
            } while start != nil
        } catch {
            throw error.authError
        }
        guard unopenable.isEmpty else {
            throw AuthError(.configError, "\(DataKeys.variable) has no key that opens \(unopenable.count) second-factor secret(s) "
                            + "(users \(unopenable.sorted().prefix(10).joined(separator: ", "))); list the key that sealed them. Nothing was re-sealed")
        }
        for (item, factor, plaintext) in stale {
            var resealed = item
            resealed["sealedSecret"] = .s(try keys.seal(plaintext, context: SecondFactorRecord.sealingContext(userID: factor.userID)))
            do {
                // Only over the value read: a factor replaced or removed meanwhile stays as it is.
                try table.putItem(resealed, condition: "sealedSecret = :read", attributes: ExpressionAttributes(values: [":read": .s(factor.sealedSecret)]))
                outcome.resealed += 1
            } catch .conditionFailed {
                outcome.alreadyCurrent += 1
            } catch {
                throw error.authError
            }
        }
        return outcome
    }
}
