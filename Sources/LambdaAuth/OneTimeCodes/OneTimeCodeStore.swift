/// The one live code of an address (`Keys.oneTimeCode`), holding the code's keyed
/// hash, its wrong attempts, its expiry and a `ttl` at that expiry. Issuing a code rewrites the
/// item, which replaces (and so kills) the previous code; the hashes of the three codes before it
/// move to `replaced1`…`replaced3`, so that one of them presented is OTP_EXPIRED, not a wrong guess.
///
/// Attempts and use are decided by conditional writes on the hash the reader saw: a wrong guess
/// is `SET attempts = attempts + 1` only while `attempts < 5`, a right one deletes the item only
/// while it is that code with attempts left, so concurrent guesses in any number of processes
/// never get a sixth try nor a second use.
struct OneTimeCodeStore: Sendable {
    let table: any Table
    static let maximumAttempts: Int64 = 5

    struct Live: Sendable {
        var codeHash: String
        var attempts: Int64
        var expiresAt: Int64
        var replacedHashes: [String]
    }

    static let replacedSlots = ["replaced1", "replaced2", "replaced3"]

    static func key(_ email: EmailAddress) -> TableKey { Keys.oneTimeCode(email.normalized) }

    /// One UpdateItem: every right-hand side reads the item as it was, so the slots shift by one.
    func put(_ email: EmailAddress, codeHash: String, now: Int64, expiresAt: Int64) throws(AuthError) {
        do {
            try table.updateItem(
                OneTimeCodeStore.key(email),
                update: "SET #r3 = if_not_exists(#r2, :none), #r2 = if_not_exists(#r1, :none), #r1 = if_not_exists(#hash, :none), "
                    + "#hash = :hash, #attempts = :zero, #issuedAt = :issuedAt, #expiresAt = :expiresAt, #ttl = :expiresAt",
                condition: nil,
                attributes: ExpressionAttributes(
                    names: ["#r1": "replaced1", "#r2": "replaced2", "#r3": "replaced3", "#hash": "codeHash", "#attempts": "attempts",
                            "#issuedAt": "issuedAt", "#expiresAt": "expiresAt", "#ttl": "ttl"],
                    values: [":none": .s("-"), ":hash": .s(codeHash), ":zero": .n(0), ":issuedAt": .s(Timestamps.format(now)),
                             ":expiresAt": .n(expiresAt)]),
                returnValues: .none)
        } catch {
            throw error.authError
        }
    }

    /// Undoes `put` after a failed delivery, unless a newer code replaced it meanwhile.
    func withdraw(_ email: EmailAddress, codeHash: String) throws(AuthError) {
        do {
            try table.deleteItem(OneTimeCodeStore.key(email), condition: "#hash = :hash",
                                 attributes: ExpressionAttributes(names: ["#hash": "codeHash"], values: [":hash": .s(codeHash)]))
        } catch .conditionFailed {
            return
        } catch {
            throw error.authError
        }
    }

    /// The live code, if there is one that has not expired.
    func live(_ email: EmailAddress, now: Int64) throws(AuthError) -> Live? {
        guard let item = try table.read(OneTimeCodeStore.key(email)),
              let hash = item["codeHash"]?.stringValue, let attempts = item["attempts"]?.int64Value,
              let expiresAt = item["expiresAt"]?.int64Value, expiresAt > now else { return nil }
        let replaced = OneTimeCodeStore.replacedSlots.compactMap { item[$0]?.stringValue }.filter { $0 != "-" }
        return Live(codeHash: hash, attempts: attempts, expiresAt: expiresAt, replacedHashes: replaced)
    }

    /// Counts one wrong guess against the code read as `live`; false: it changed meanwhile.
    func recordWrongAttempt(_ email: EmailAddress, _ live: Live, now: Int64) throws(AuthError) -> Bool {
        do {
            try table.updateItem(OneTimeCodeStore.key(email), update: "SET #attempts = #attempts + :one",
                                 condition: OneTimeCodeStore.stillUsable, attributes: conditionAttributes(live, now: now, extra: [":one": .n(1)]),
                                 returnValues: .none)
            return true
        } catch .conditionFailed {
            return false
        } catch {
            throw error.authError
        }
    }

    /// Uses the code read as `live` (deletes it); false: someone else used, replaced or exhausted it first.
    func consume(_ email: EmailAddress, _ live: Live, now: Int64) throws(AuthError) -> Bool {
        do {
            try table.deleteItem(OneTimeCodeStore.key(email), condition: OneTimeCodeStore.stillUsable, attributes: conditionAttributes(live, now: now))
            return true
        } catch .conditionFailed {
            return false
        } catch {
            throw error.authError
        }
    }

    static let stillUsable = "#hash = :hash AND #attempts < :maximum AND #expiresAt > :now"

    func conditionAttributes(_ live: Live, now: Int64, extra: [String: AttributeValue] = [:]) -> ExpressionAttributes {
        ExpressionAttributes(names: ["#hash": "codeHash", "#attempts": "attempts", "#expiresAt": "expiresAt"],
                             values: [":hash": .s(live.codeHash), ":maximum": .n(OneTimeCodeStore.maximumAttempts), ":now": .n(now)]
                                .merging(extra) { $1 })
    }
}
