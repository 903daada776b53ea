import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The local store: a directory (`AUTH_STORE`) that many processes share safely.
///
/// Design, and why:
/// - `LOCK`: flock(2), shared for reads and exclusive for writes, polled up to 2 s (then
///   `unavailable`). Locks die with their process, so a kill -9 never wedges the store.
/// - `wal`: the write-ahead log. A commit is ONE appended record (length, SHA-256 prefix, DynamoDB
///   JSON after-images of every item it changes) and one fdatasync; only then is it acknowledged.
///   One record per commit makes a transaction atomic across its items: after a crash a record is
///   either complete (checksum matches) or a torn tail that was never acknowledged and is ignored
///   (and truncated by the next writer). A damaged record with data after it is corruption.
/// - `items/<shard>/<PK>.json`: the checkpointed items, one DynamoDB JSON file per partition
///   (`{"Items": [...]}`; shard = first 3 hex digits of SHA-256(PK), names escaped readably). A
///   partition is what a query reads, and ours are small (a user's profile, links, sessions,
///   tokens), so this keeps the store at one file per partition instead of one per item. The
///   families that grow with use (sessions, refresh tokens) are segments in files of their own
///   (`<PK>~SESSION.json`, `LocalStoreSchema.segmentPrefixes`), so that a sign-in's read of the
///   profile and identities costs the same however many sessions the user has had.
/// - `gsi1/<shard>/<GSI1PK>.json`: `{"Keys": [...]}`, the keys of the items with that GSI1PK. A
///   query re-checks each item's current GSI1PK, so a stale key (left by an interrupted
///   checkpoint) is harmless.
/// - Checkpoint: rewrites the touched partition and index files (temporary files, syncfs,
///   renames, syncfs) and only then empties the log (new generation in its header). A crash
///   midway leaves the log intact and every file either old or new, so nothing is lost. Each
///   cost is per touched partition: nothing rewrites or scans the table. Rewriting a partition
///   drops its expired items (DynamoDB's TTL sweep).
/// - When: a checkpoint rewrites whole partitions, and a refresh chain grows one user's
///   partition by a token per rotation (USED tokens stay an hour), so a checkpoint run by the
///   write that crossed the threshold cost that request 30 ms at 1,000 tokens and up to 1.5 s
///   at 10,000. So a write only appends and syncs; past 16 KB it marks its table due, and the
///   process checkpoints when nobody waits for it (`StoreMaintenance.runDue`: the Lambda
///   runtime loop after posting a response, before its next `/next`; stdin mode after writing
///   its response). A writer still checkpoints inline past four times the threshold, so the log
///   stays bounded in a process that never runs maintenance (authctl, tests, a killed handler).
/// - Reads never create or change a file (not even LOCK); a process keeps the part of the log it
///   has parsed and reads only the new tail next time, so opening the store costs nothing.
public final class LocalTable: Table, Sendable {
    /// Every process that opens the store parses the whole log (a handler process is often new),
    /// so the log is kept short: at 48 KB parsing it was a third of a whole-process sign-in.
    /// Checkpoints run after the response, so checkpointing three times as often costs no
    /// request its latency.
    static let checkpointThreshold = 16 * 1024
    /// Past `checkpointThreshold` times this, a write checkpoints inline.
    static let inlineCheckpointFactor = 4
    static let keyNames: Set<String> = ["PK", "SK"]
    static let maximumItemSize = 400 * 1024

    public let directory: String
    let clock: any WallClock
    /// The index's name and the segment families, as the opener gave them.
    public let schema: LocalStoreSchema
    let layout: StoreLayout
    /// The part of the log this process has parsed. flock is per open file, so threads of one
    /// process serialise on this lock first.
    let cachedLog = Mutex<WriteAheadLog.State?>(nil)

    let checkpointThreshold: Int
    let dueStores: DueStores
    /// False only in `auth-bench`, to set the change log's cost beside a store without it.
    let recordsChanges: Bool

    public convenience init(directory: String, clock: any WallClock, schema: LocalStoreSchema) {
        self.init(directory: directory, clock: clock, schema: schema, checkpointThreshold: LocalTable.checkpointThreshold)
    }

    /// `auth-bench`'s store without change records: the same commits, minus the change log's
    /// share (the old images and the stamp in each log record), measured side by side.
    package static func withoutChangeRecords(directory: String, clock: any WallClock, schema: LocalStoreSchema) -> LocalTable {
        LocalTable(directory: directory, clock: clock, schema: schema, checkpointThreshold: LocalTable.checkpointThreshold,
                   recordsChanges: false)
    }

    /// Tests use a small threshold so that checkpoints happen in the middle of everything, and
    /// their own `dueStores` to see which maintenance a write asked for.
    init(directory: String, clock: any WallClock, schema: LocalStoreSchema, checkpointThreshold: Int, dueStores: DueStores = .shared,
         recordsChanges: Bool = true) {
        self.directory = directory
        self.clock = clock
        self.schema = schema
        self.checkpointThreshold = checkpointThreshold
        self.dueStores = dueStores
        self.recordsChanges = recordsChanges
        layout = StoreLayout(root: directory, segmentPrefixes: schema.segmentPrefixes)
    }

    // MARK: - Table

    public func getItem(_ key: TableKey) throws(TableError) -> Item? {
        try LocalTable.validate(key)
        return try read { reader throws(TableError) in try reader.item(key) }
    }

    public func putItem(_ item: Item, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        let key = try LocalTable.validate(item)
        let parsed = try condition.map { (text) throws(TableError) in try ExpressionParser.condition(text, attributes) }
        try write { batch throws(TableError) in
            if let parsed, !ExpressionEvaluator.evaluate(parsed, on: try batch.reader.item(key)) {
                throw .conditionFailed
            }
            batch.stage(key, item)
        }
    }

    @discardableResult
    public func updateItem(_ key: TableKey, update: String, condition: String?, attributes: ExpressionAttributes,
                           returnValues: ReturnValues) throws(TableError) -> Item? {
        try LocalTable.validate(key)
        let parsedUpdate = try ExpressionParser.update(update, attributes)
        let parsedCondition = try condition.map { (text) throws(TableError) in try ExpressionParser.condition(text, attributes) }
        return try write { batch throws(TableError) in
            let current = try batch.reader.item(key)
            if let parsedCondition, !ExpressionEvaluator.evaluate(parsedCondition, on: current) { throw .conditionFailed }
            let updated = try ExpressionEvaluator.apply(parsedUpdate, to: current ?? key.item, keyNames: LocalTable.keyNames)
            try LocalTable.validate(updated)
            batch.stage(key, updated)
            switch returnValues {
            case .none: return nil
            case .allOld: return current
            case .allNew: return updated
            }
        }
    }

    public func deleteItem(_ key: TableKey, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        try LocalTable.validate(key)
        let parsed = try condition.map { (text) throws(TableError) in try ExpressionParser.condition(text, attributes) }
        try write { batch throws(TableError) in
            if let parsed, !ExpressionEvaluator.evaluate(parsed, on: try batch.reader.item(key)) { throw .conditionFailed }
            if try batch.reader.storedItem(key) != nil { batch.stage(key, nil) }
        }
    }

    public func query(_ request: QueryRequest) throws(TableError) -> QueryPage {
        let onIndex: Bool
        switch request.indexName {
        case nil: onIndex = false
        case schema.indexName?: onIndex = true
        case let other?: throw .invalidRequest("unknown index \(other) (the table has \(schema.indexName))")
        }
        if let limit = request.limit, limit <= 0 { throw .invalidRequest("limit must be at least 1") }
        let condition = try ExpressionParser.keyCondition(request.keyCondition, request.attributes,
                                                          partitionName: onIndex ? "GSI1PK" : "PK",
                                                          sortName: onIndex ? "GSI1SK" : "SK")
        func order(_ item: Item) -> [String] {
            let key = TableKey(item: item)
            return [(onIndex ? item["GSI1SK"]?.stringValue : key?.sk) ?? "", key?.pk ?? "", key?.sk ?? ""]
        }
        var start: [String]?
        if let exclusiveStartKey = request.exclusiveStartKey {
            guard TableKey(item: exclusiveStartKey) != nil, !onIndex || exclusiveStartKey["GSI1SK"]?.stringValue != nil else {
                throw .invalidRequest("the exclusive start key must hold the key attributes of the table and index")
            }
            start = order(exclusiveStartKey)
        }
        return try read { reader throws(TableError) in
            // A reader at the dawn of time sees every stored item as unexpired.
            let reader = request.includingExpired ? StoreReader(layout: reader.layout, overlay: reader.overlay, now: -.infinity) : reader
            let matches: (String) -> Bool = { condition.sortKey?.matches($0) ?? true }
            guard onIndex else {
                // One partition: the sort key alone orders it (no key tuple built per item).
                var rows: [(sortKey: String, item: Item)] = []
                for item in try reader.partition(condition.partitionKey, sortKey: condition.sortKey) {
                    // The reader kept only the items whose sort keys match.
                    if let sortKey = item["SK"]?.stringValue { rows.append((sortKey, item)) }
                }
                rows.sort { $0.sortKey.utf8.lexicographicallyPrecedes($1.sortKey.utf8) }
                if !request.scanIndexForward { rows.reverse() }
                if let start = start?.first {
                    rows.removeAll { row in
                        request.scanIndexForward ? !start.utf8.lexicographicallyPrecedes(row.sortKey.utf8)
                            : !row.sortKey.utf8.lexicographicallyPrecedes(start.utf8)
                    }
                }
                return LocalTable.page(rows.map(\.item), limit: request.limit) { TableKey(item: $0)!.item }
            }
            let candidates = try reader.indexPartition(condition.partitionKey)
            var rows = candidates.map { (order($0), $0) }.filter { row in matches(row.0[0]) }
            rows.sort { LocalTable.precedes($0.0, $1.0) }
            if !request.scanIndexForward { rows.reverse() }
            if let start {
                rows.removeAll { row in
                    request.scanIndexForward ? !LocalTable.precedes(start, row.0) : !LocalTable.precedes(row.0, start)
                }
            }
            return LocalTable.page(rows.map(\.1), limit: request.limit) { item in
                var key = TableKey(item: item)!.item
                if onIndex {
                    key["GSI1PK"] = item["GSI1PK"]
                    key["GSI1SK"] = item["GSI1SK"]
                }
                return key
            }
        }
    }

    public func transactWrite(_ actions: [TransactWriteAction]) throws(TableError) {
        var parsed: [String: ConditionExpression] = [:]
        let plan = try LocalTable.plan(actions, parsed: &parsed)
        try write { batch throws(TableError) in
            let (reasons, changes) = try LocalTable.evaluate(plan, current: { key throws(TableError) in try batch.reader.item(key) },
                                                             stored: { key throws(TableError) in try batch.reader.storedItem(key) != nil })
            guard reasons.allSatisfy({ $0 == .none }) else { throw .transactionCanceled(reasons: reasons) }
            for (key, item) in changes { batch.stage(key, item) }
        }
    }

    enum PlannedAction {
        case put(Item, ConditionExpression?)
        case update(UpdateExpression, ConditionExpression?)
        case delete(ConditionExpression?)
        case check(ConditionExpression)
    }

    /// A transaction's actions parsed and validated, before any lock is taken.
    /// `parsed`: conditions without placeholders values already parsed (a bulk commit's thousands
    /// of `attribute_not_exists(PK)` are parsed once).
    static func plan(_ actions: [TransactWriteAction], parsed: inout [String: ConditionExpression]) throws(TableError)
        -> [(TableKey, PlannedAction)] {
        guard (1...100).contains(actions.count) else { throw .invalidRequest("a transaction holds 1 to 100 actions") }
        var plan: [(TableKey, PlannedAction)] = []
        for action in actions {
            func condition(_ text: String?, _ attributes: ExpressionAttributes) throws(TableError) -> ConditionExpression? {
                guard let text else { return nil }
                guard attributes.names.isEmpty, attributes.values.isEmpty else { return try ExpressionParser.condition(text, attributes) }
                if let known = parsed[text] { return known }
                let condition = try ExpressionParser.condition(text, attributes)
                parsed[text] = condition
                return condition
            }
            switch action {
            case .put(let item, let text, let attributes):
                plan.append((try LocalTable.validate(item), .put(item, try condition(text, attributes))))
            case .update(let key, let update, let text, let attributes):
                try LocalTable.validate(key)
                plan.append((key, .update(try ExpressionParser.update(update, attributes), try condition(text, attributes))))
            case .delete(let key, let text, let attributes):
                try LocalTable.validate(key)
                plan.append((key, .delete(try condition(text, attributes))))
            case .conditionCheck(let key, let text, let attributes):
                try LocalTable.validate(key)
                plan.append((key, .check(try ExpressionParser.condition(text, attributes))))
            }
        }
        guard Set(plan.map(\.0)).count == plan.count else {
            throw .invalidRequest("transaction request cannot include multiple operations on one item")
        }
        return plan
    }

    /// One reason per action and the changes the transaction makes if every reason is `None`.
    static func evaluate(_ plan: [(TableKey, PlannedAction)], current item: (TableKey) throws(TableError) -> Item?,
                         stored: (TableKey) throws(TableError) -> Bool) throws(TableError)
        -> (reasons: [CancellationReason], changes: [(TableKey, Item?)]) {
        var reasons: [CancellationReason] = []
        var changes: [(TableKey, Item?)] = []
        for (key, planned) in plan {
            let current = try item(key)
            func holds(_ condition: ConditionExpression?) -> Bool {
                condition.map { ExpressionEvaluator.evaluate($0, on: current) } ?? true
            }
            switch planned {
            case .put(let item, let condition):
                reasons.append(holds(condition) ? .none : .conditionalCheckFailed)
                changes.append((key, item))
            case .update(let update, let condition):
                guard holds(condition) else {
                    reasons.append(.conditionalCheckFailed)
                    continue
                }
                do throws(TableError) {
                    let updated = try ExpressionEvaluator.apply(update, to: current ?? key.item, keyNames: LocalTable.keyNames)
                    try LocalTable.validate(updated)
                    changes.append((key, updated))
                    reasons.append(.none)
                } catch {
                    reasons.append(CancellationReason(code: "ValidationError", message: error.description))
                }
            case .delete(let condition):
                reasons.append(holds(condition) ? .none : .conditionalCheckFailed)
                if try stored(key) { changes.append((key, nil)) }
            case .check(let condition):
                reasons.append(holds(condition) ? .none : .conditionalCheckFailed)
            }
        }
        return (reasons, changes)
    }

    public func scan(limit: Int?, exclusiveStartKey: Item?) throws(TableError) -> QueryPage {
        if let limit, limit <= 0 { throw .invalidRequest("limit must be at least 1") }
        var startShard = 0
        var start: [String]?
        if let exclusiveStartKey {
            guard let key = TableKey(item: exclusiveStartKey) else {
                throw .invalidRequest("the exclusive start key must hold PK and SK")
            }
            startShard = Int(StoreLayout.shard(key.pk), radix: 16)!
            start = [key.pk, key.sk]
        }
        let wanted = limit ?? Int.max
        return try read { reader throws(TableError) in
            var items: [Item] = []
            var shard = startShard
            while shard < StoreLayout.shardCount, items.count < wanted {
                var rows = try reader.shardItems(StoreLayout.shardName(shard)).map { item in
                    ([item["PK"]?.stringValue ?? "", item["SK"]?.stringValue ?? ""], item)
                }
                rows.sort { LocalTable.precedes($0.0, $1.0) }
                if shard == startShard, let start { rows.removeAll { !LocalTable.precedes(start, $0.0) } }
                items += rows.map(\.1)
                shard += 1
            }
            // Stopped by the limit with shards or items left: DynamoDB's way of saying "more may follow".
            guard items.count >= wanted, items.count > wanted || shard < StoreLayout.shardCount else {
                return QueryPage(items: items, lastEvaluatedKey: nil)
            }
            let kept = Array(items.prefix(wanted))
            return QueryPage(items: kept, lastEvaluatedKey: kept.last.flatMap { TableKey(item: $0)?.item })
        }
    }

    // MARK: - Local extras (authctl export/import, the benchmark)

    /// Every visible item, a shard at a time (each shard read under its own shared lock, so
    /// writers are never held up for long; like a DynamoDB scan, not a point-in-time snapshot).
    public func forEachItem(_ body: (Item) throws -> Void) throws {
        for shard in 0..<StoreLayout.shardCount {
            let items = try read { reader throws(TableError) in try reader.shardItems(StoreLayout.shardName(shard)) }
            for item in items { try body(item) }
        }
    }

    /// Puts many items in one commit (atomic and durable as a whole), then checkpoints at once so
    /// that the log stays small. The fast path of `authctl store import`.
    public func importBatch(_ items: [Item]) throws(TableError) {
        guard !items.isEmpty else { return }
        var keyed: [(TableKey, Item)] = []
        for item in items { keyed.append((try LocalTable.validate(item), item)) }
        try write(forceCheckpoint: true, recordingChanges: false) { batch throws(TableError) in
            for (key, item) in keyed { batch.stage(key, item) }
        }
    }

    /// Many independent transactions in one commit: each is all or nothing and sees the ones before
    /// it, and the commit is atomic and durable as a whole, then checkpointed at once (the bulk
    /// path of `authctl users import`: one sync for thousands of users, not one each). nil for a
    /// transaction that committed, else its reasons, as `transactWrite` would have thrown them.
    public func transactEach(_ transactions: [[TransactWriteAction]]) throws(TableError) -> [[CancellationReason]?] {
        var plans: [[(TableKey, PlannedAction)]] = []
        var parsed: [String: ConditionExpression] = [:]
        for actions in transactions { plans.append(try LocalTable.plan(actions, parsed: &parsed)) }
        return try write(forceCheckpoint: true) { batch throws(TableError) -> [[CancellationReason]?] in
            // What earlier transactions of this commit staged: later ones read it first.
            var staged: [TableKey: Item?] = [:]
            var outcomes: [[CancellationReason]?] = []
            for plan in plans {
                let (reasons, changes) = try LocalTable.evaluate(
                    plan,
                    current: { key throws(TableError) in
                        if let item = staged[key] { return item }
                        return try batch.reader.item(key)
                    },
                    stored: { key throws(TableError) in
                        if let item = staged[key] { return item != nil }
                        return try batch.reader.storedItem(key) != nil
                    })
                guard reasons.allSatisfy({ $0 == .none }) else {
                    outcomes.append(reasons)
                    continue
                }
                for (key, item) in changes {
                    staged[key] = .some(item)
                    batch.stage(key, item)
                }
                outcomes.append(nil)
            }
            return outcomes
        }
    }

    // MARK: - Helpers

    /// Byte-wise (UTF-8) order of key tuples, as DynamoDB orders string keys.
    static func precedes(_ a: [String], _ b: [String]) -> Bool {
        for (left, right) in zip(a, b) where !left.sameBytes(as: right) {
            return left.utf8.lexicographicallyPrecedes(right.utf8)
        }
        return a.count < b.count
    }

    static func page(_ items: [Item], limit: Int?, key: (Item) -> Item) -> QueryPage {
        guard let limit, items.count > limit else { return QueryPage(items: items, lastEvaluatedKey: nil) }
        let kept = Array(items.prefix(limit))
        return QueryPage(items: kept, lastEvaluatedKey: kept.last.map(key))
    }

    static func validate(_ key: TableKey) throws(TableError) {
        guard !key.pk.isEmpty, !key.sk.isEmpty else { throw .invalidRequest("PK and SK must be non-empty strings") }
        guard key.pk.utf8.count <= 2048, key.sk.utf8.count <= 1024 else {
            throw .invalidRequest("PK is limited to 2048 bytes and SK to 1024 bytes")
        }
    }

    @discardableResult
    static func validate(_ item: Item) throws(TableError) -> TableKey {
        guard let key = TableKey(item: item) else { throw .invalidRequest("an item needs string PK and SK attributes") }
        try validate(key)
        for name in ["GSI1PK", "GSI1SK"] {
            if let value = item[name] {
                guard case .s(let text) = value, !text.isEmpty else {
                    throw .invalidRequest("\(name) is an index key: it must be a non-empty string")
                }
            }
        }
        guard DynamoJSON.encodedSizeBound(item) <= maximumItemSize || DynamoJSON.encodedBytes(item).count <= maximumItemSize else {
            throw .invalidRequest("the item is larger than 400 KB")
        }
        return key
    }
}
