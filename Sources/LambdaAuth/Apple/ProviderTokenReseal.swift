/// `authctl keys reseal`: every stored provider token that an older data key sealed is sealed
/// again under the first key of AUTH_DATA_KEYS, so that the older key can then be dropped
/// (docs/keys-and-secrets.md, "Data-key rotation"). All or nothing in intent: every value is opened before anything
/// is written, and one that no listed key opens stops it with the store unchanged. On success no
/// store file holds a value sealed under an older key any more (`Table.eraseDeletedItems`).
public enum ProviderTokenReseal {
    public struct Outcome: Sendable, Equatable {
        /// Values sealed again under the first key.
        public var resealed: Int
        /// Values already under the first key (or rewritten under it by a sign-in meanwhile).
        public var alreadyCurrent: Int
    }

    public static func run(table: any Table, keys: DataKeys) throws(AuthError) -> Outcome {
        let sealing = ProviderTokenSealing(keys: keys)
        var stale: [(item: Item, record: ProviderTokenRecord, plaintext: String)] = []
        var unopenable: [String] = []
        var outcome = Outcome(resealed: 0, alreadyCurrent: 0)
        for (item, record) in try everyProviderToken(in: table) {
            guard let opened = sealing.open(record) else {
                unopenable.append(record.userID)
                continue
            }
            if opened.isUnderFirstKey {
                outcome.alreadyCurrent += 1
            } else {
                stale.append((item, record, opened.plaintext))
            }
        }
        guard unopenable.isEmpty else {
            let named = unopenable.sorted().prefix(10).joined(separator: ", ") + (unopenable.count > 10 ? ", …" : "")
            throw AuthError(.configError, "\(DataKeys.variable) has no key that opens \(unopenable.count) stored value(s) "
                            + "(users \(named)); list the key that sealed them. Nothing was re-sealed")
        }
        for (item, record, plaintext) in stale {
            var resealed = item
            resealed["sealedToken"] = .s(try sealing.seal(plaintext, userID: record.userID, provider: record.provider, subject: record.subject))
            do {
                // Only over the value just read: a sign-in that replaced it meanwhile sealed under
                // the first key already, and a deletion that removed it must not be undone.
                try table.putItem(resealed, condition: "sealedToken = :read",
                                  attributes: ExpressionAttributes(values: [":read": .s(record.sealedToken)]))
                outcome.resealed += 1
            } catch .conditionFailed {
                outcome.alreadyCurrent += 1
            } catch {
                throw error.authError
            }
        }
        // The point of re-sealing is dropping the old key: a value it sealed must not stay in the
        // store's storage (the local store's log and files) once this reports success. Run even
        // with nothing re-sealed here, for values a sign-in re-sealed meanwhile.
        do {
            try table.eraseDeletedItems()
        } catch {
            throw error.authError
        }
        return outcome
    }

    /// Only the token items are kept: a table holds far more sessions than tokens.
    private static func everyProviderToken(in table: any Table) throws(AuthError) -> [(Item, ProviderTokenRecord)] {
        var tokens: [(Item, ProviderTokenRecord)] = []
        var start: Item?
        do {
            repeat {
                let page = try table.scan(limit: nil, exclusiveStartKey: start)
                tokens += page.items.compactMap { item in ProviderTokenRecord(item: item).map { (item, $0) } }
                start = page.lastEvaluatedKey
            } while start != nil
        } catch {
            throw error.authError
        }
        return tokens
    }
}
