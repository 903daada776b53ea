import LambdaAuth

/// `authctl users import`: decides what each record of an export becomes (a user of ours, or a
/// skip with its reason), then writes the users, each as one conditional transaction of whole
/// users (ImportedAccount), many at once: one commit of thousands on the local store, TransactWriteItems
/// of up to 100 actions on DynamoDB. No progress file: user ids derive from the old ids, so a
/// rerun meets what an earlier run wrote as "already present" and writes the rest.
public struct UserImport {
    public var system: ImportSystem
    /// THEIRS → OURS, beside (and over) the system's own names for Google and Apple.
    public var providerMap: [String: String]
    public var sleeper: any Sleeper
    /// Called after each batch: records settled so far, of all.
    public var progress: ((Summary) -> Void)?
    /// Items per local commit (the bulk path's batch, as `store import`'s).
    public var localBatchItems = 10_000
    /// Actions per TransactWriteItems: DynamoDB takes 100, but a transaction's latency grows with
    /// its items and the client gives each request 3 s (moto_server, which copies the table for
    /// each transaction, ran past that at 100); a quarter costs a few more requests, no more writes.
    public var transactionActions = 25

    public init(system: ImportSystem, providerMap: [String: String] = [:], sleeper: any Sleeper = SystemSleeper(),
                progress: ((Summary) -> Void)? = nil) {
        self.system = system
        self.providerMap = providerMap
        self.sleeper = sleeper
        self.progress = progress
    }

    public struct Skip: Sendable, Equatable {
        public var position: String
        public var id: String?
        public var reason: String

        var json: JSONValue {
            ["record": .string(position), "id": id.map(JSONValue.string) ?? .null, "reason": .string(reason)]
        }
    }

    public struct Summary: Sendable {
        public var system: ImportSystem
        public var records = 0
        public var imported = 0
        public var alreadyPresent = 0
        public var skipped: [Skip] = []
        /// Identities dropped from users (imported or not) because we have no name for their
        /// provider: THEIRS → how many.
        public var unmappedProviders: [String: Int] = [:]
        /// Write requests sent (local commits, or TransactWriteItems) and items they wrote.
        public var writeRequests = 0
        public var itemsWritten = 0

        public var settled: Int { imported + alreadyPresent + skipped.count }

        /// The summary printed on stdout (docs/migration.md describes it).
        public var json: JSONValue {
            ["system": .string(system.rawValue), "records": .number(records), "imported": .number(imported),
             "alreadyPresent": .number(alreadyPresent), "skipped": .array(skipped.map(\.json)),
             "unmappedProviders": .object(unmappedProviders.mapValues { .number($0) }),
             "writeRequests": .number(writeRequests), "itemsWritten": .number(itemsWritten)]
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Checks `--provider-map` entries (`THEIRS=OURS`, OURS a provider name we could sign in with).
    public static func parseProviderMap(_ entries: [String]) throws(Failure) -> [String: String] {
        var map: [String: String] = [:]
        for entry in entries {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex, entry.index(after: equals) != entry.endIndex else {
                throw Failure(description: "--provider-map takes THEIRS=OURS, not \(entry)")
            }
            let theirs = String(entry[..<equals]), ours = String(entry[entry.index(after: equals)...])
            guard let name = ProviderName(rawValue: ours), ![ProviderName.email, .passkey].contains(name) else {
                throw Failure(description: "--provider-map \(entry): \(ours) is not a provider name (google, apple, or a name of AUTH_OIDC_PROVIDERS)")
            }
            map[theirs] = name.rawValue
        }
        return map
    }

    // MARK: - Deciding

    enum Decision {
        case account(ImportedAccount)
        case skip(Skip)
    }

    /// What a record becomes: checked here, before any write, so that a malformed record never
    /// reaches the table.
    func decide(_ user: SourceUser, unmapped: inout [String: Int]) -> Decision {
        func skip(_ reason: String) -> Decision { .skip(Skip(position: user.position, id: user.id, reason: reason)) }
        if let invalid = user.invalid { return skip("invalid record: \(invalid)") }
        guard let id = user.id else { return skip("invalid record: no id") }
        guard let createdAt = user.createdAt else { return skip("invalid record: no creation time") }
        if user.disabled { return skip("disabled in \(system.rawValue): not imported, so it cannot sign in here") }
        if let email = user.email, email.utf8.count > 254 || !email.contains("@") {
            return skip("invalid record: email \(email) is not an address")
        }
        var identities: [ImportedAccount.Identity] = []
        var hadPassword = false
        for identity in user.identities {
            let mapped: MappedProvider?
            if let ours = providerMap[identity.provider] {
                mapped = ProviderName(rawValue: ours).map(MappedProvider.ours)
            } else {
                mapped = system.builtInProviders[identity.provider]
            }
            switch mapped {
            case .password?:
                hadPassword = true
            case .ours(let provider)?:
                guard !identity.subject.isEmpty, identity.subject.utf8.count <= 1024 else {
                    return skip("invalid record: the \(identity.provider) subject is empty or too long")
                }
                if identities.contains(where: { $0.provider == provider }) {
                    return skip("invalid record: two \(provider.rawValue) identities (we keep one per provider)")
                }
                identities.append(.init(provider: provider, subject: identity.subject, email: identity.email))
            case nil:
                unmapped[identity.provider, default: 0] += 1
            }
        }
        // Their password is not imported: a verified address signs in with an email code instead.
        if hadPassword, user.emailVerified, let email = user.email, let address = try? EmailAddress(email),
           !identities.contains(where: { $0.provider == .email }) {
            identities.append(.init(provider: .email, subject: address.normalized, email: address.normalized))
        }
        guard !identities.isEmpty else {
            let theirs = user.identities.map(\.provider).filter { $0 != "password" }
            let unmappedNote = theirs.isEmpty ? "" : " (their providers: \(theirs.joined(separator: ", ")); see --provider-map)"
            return skip("no way to sign in: no Google, Apple or mapped identity, and no verified email\(unmappedNote)")
        }
        return .account(ImportedAccount(system: system.rawValue, sourceID: id, email: user.email, emailVerified: user.emailVerified,
                                        displayName: user.displayName, pictureURL: user.pictureURL, createdAt: createdAt,
                                        lastSignInAt: user.lastSignInAt, identities: identities))
    }

    // MARK: - Writing

    public func run(_ users: [SourceUser], into table: any Table) throws -> Summary {
        var summary = Summary(system: system)
        summary.records = users.count
        var pending: [(position: String, account: ImportedAccount)] = []
        var seen: Set<String> = []
        for user in users {
            switch decide(user, unmapped: &summary.unmappedProviders) {
            case .skip(let skip): summary.skipped.append(skip)
            case .account(let account):
                guard seen.insert(account.sourceID).inserted else {
                    summary.skipped.append(Skip(position: user.position, id: account.sourceID,
                                                reason: "invalid record: the same id as an earlier record"))
                    continue
                }
                pending.append((user.position, account))
            }
        }
        if let local = table as? LocalTable {
            try writeLocally(pending, into: local, &summary)
        } else {
            try writeInTransactions(pending, into: table, &summary)
        }
        // In the file's order, whatever order the writes settled them in.
        let order = Dictionary(users.enumerated().map { ($0.element.position, $0.offset) }, uniquingKeysWith: { first, _ in first })
        summary.skipped.sort { (order[$0.position] ?? 0) < (order[$1.position] ?? 0) }
        return summary
    }

    /// A settled user: imported, present already, or in someone's way.
    private func settle(_ entry: (position: String, account: ImportedAccount), _ conflict: ImportedAccount.Conflict,
                        _ summary: inout Summary) -> Bool {
        func skip(_ reason: String) { summary.skipped.append(Skip(position: entry.position, id: entry.account.sourceID, reason: reason)) }
        switch conflict {
        case .alreadyPresent: summary.alreadyPresent += 1
        case .userIDTaken: skip("user \(entry.account.userID) exists and was not imported from this record")
        case .identityHeld(let provider, let subject, let holder):
            skip("identity \(provider.rawValue) \(subject) belongs to user \(holder)")
        case .emailClaimed(let email, let owner): skip("email \(email) is claimed by user \(owner)")
        case .none: return false
        }
        return true
    }

    /// Thousands of users a commit; each is its own transaction inside it.
    private func writeLocally(_ pending: [(position: String, account: ImportedAccount)], into table: LocalTable,
                              _ summary: inout Summary) throws {
        var start = 0
        var retries: [(position: String, account: ImportedAccount)] = []
        var rounds = 0
        while start < pending.count || !retries.isEmpty {
            var batch: [(position: String, account: ImportedAccount)] = []
            var items = 0
            if !retries.isEmpty {
                rounds += 1
                guard rounds <= 3 else {
                    for entry in retries { settle(stuck: entry, &summary) }
                    retries = []
                    continue
                }
                batch = retries
                retries = []
            } else {
                while start < pending.count, items < localBatchItems {
                    items += pending[start].account.itemCount
                    batch.append(pending[start])
                    start += 1
                }
            }
            let transactions = batch.map(\.account.actions)
            let outcomes = try table.transactEach(transactions)
            if outcomes.contains(where: { $0 == nil }) { summary.writeRequests += 1 }
            for (index, outcome) in outcomes.enumerated() {
                guard let reasons = outcome else {
                    summary.imported += 1
                    summary.itemsWritten += transactions[index].count
                    continue
                }
                if !settle(batch[index], try ImportedAccount.Conflict.of(batch[index].account, reasons: reasons, table: table), &summary) {
                    retries.append(batch[index])
                }
            }
            progress?(summary)
        }
    }

    private func settle(stuck entry: (position: String, account: ImportedAccount), _ summary: inout Summary) {
        summary.skipped.append(Skip(position: entry.position, id: entry.account.sourceID,
                                    reason: "kept failing its conditions with nothing in the way; run the import again"))
    }

    /// DynamoDB: users packed into TransactWriteItems of up to `transactionActions`, no two touching one
    /// item (DynamoDB refuses that), the first of two users that want one item written first. A
    /// cancelled transaction names, per action, whose condition failed: those users are settled by
    /// strongly consistent reads, the others go again, packed as before. Throttling that outlasts
    /// the client's own retries backs off here, then the import stops (a rerun resumes it).
    private func writeInTransactions(_ pending: [(position: String, account: ImportedAccount)], into table: any Table,
                                     _ summary: inout Summary) throws {
        typealias Entry = (position: String, account: ImportedAccount)
        var queue = pending[...]
        // Users of a cancellation that named no one: each goes alone.
        var alone: [Entry] = []
        var attempts: [String: Int] = [:]
        while !queue.isEmpty || !alone.isEmpty {
            var batch: [Entry] = []
            if !alone.isEmpty {
                batch = [alone.removeFirst()]
            } else {
                var keys: Set<TableKey> = []
                var actions = 0
                while let next = queue.first {
                    let count = next.account.actions.count
                    guard actions + count <= transactionActions, keys.isDisjoint(with: next.account.keys) else { break }
                    keys.formUnion(next.account.keys)
                    actions += count
                    batch.append(next)
                    queue.removeFirst()
                }
                if batch.isEmpty, let next = queue.popFirst() { batch = [next] }  // alone; over 100 actions, the store refuses it below
            }
            let actions = batch.flatMap(\.account.actions)
            let reasons = try transactWithBackoff(actions, table: table)
            summary.writeRequests += 1
            guard let reasons else {
                summary.imported += batch.count
                summary.itemsWritten += actions.count
                progress?(summary)
                continue
            }
            var offset = 0
            var again: [Entry] = []
            var named = false
            for entry in batch {
                let count = entry.account.actions.count
                let own = offset + count <= reasons.count ? Array(reasons[offset..<offset + count]) : []
                offset += count
                let conditionFailed = own.contains { $0.code == CancellationReason.conditionalCheckFailed.code }
                if batch.count == 1, !conditionFailed, !own.isEmpty {
                    let refusal = own.filter { $0.code != "None" }.map { "\($0.code) \($0.message ?? "")" }.joined(separator: "; ")
                    summary.skipped.append(Skip(position: entry.position, id: entry.account.sourceID, reason: "refused by the store: \(refusal)"))
                    named = true
                    continue
                }
                guard conditionFailed || batch.count == 1 else {
                    again.append(entry)
                    continue
                }
                named = true
                if settle(entry, try ImportedAccount.Conflict.of(entry.account, reasons: own, table: table), &summary) { continue }
                attempts[entry.account.sourceID, default: 0] += 1
                if attempts[entry.account.sourceID]! >= 3 { settle(stuck: entry, &summary) } else { alone.append(entry) }
            }
            if named {
                queue = (again + queue)[...]
            } else {
                alone += again
            }
            progress?(summary)
        }
    }

    /// nil when the transaction committed, else its cancellation reasons. The DynamoDB client
    /// already retries throttling a few times with backoff; past that, this waits longer
    /// (1, 2, 4, 8, 16 s) before giving up, since an import is a long run that can afford to.
    private func transactWithBackoff(_ actions: [TransactWriteAction], table: any Table) throws -> [CancellationReason]? {
        var delay = 1.0
        while true {
            do throws(TableError) {
                try table.transactWrite(actions)
                return nil
            } catch .transactionCanceled(let reasons) {
                return reasons
            } catch .unavailable(let reason) where delay <= 16 {
                writeStandardErrorLine("authctl: the store is busy (\(reason)); retrying in \(Int(delay)) s")
                sleeper.sleep(seconds: delay)
                delay *= 2
            } catch {
                throw Failure(description: "\(error); what was written stays, and running the import again resumes it")
            }
        }
    }
}
