import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What one operation sees of the store: the checkpointed partition files with the write-ahead
/// log's changes laid over them, at one instant `now` (for ttl). Only ever reads.
struct StoreReader {
    let layout: StoreLayout
    let overlay: Overlay
    let now: Double

    /// The item as stored, expired or not.
    func storedItem(_ key: TableKey) throws(TableError) -> Item? {
        switch try overlay.lookup(key) {
        case .changed(let item): return item
        case .unchanged:
            if let prefix = layout.segment(ofSortKey: key.sk),
               let segment = try StoreReader.segment(layout, partitionKey: key.pk, prefix) {
                return try segment.item(sortKey: key.sk)
            }
            return try StoreReader.keyedPartition(layout.partitionPath(key.pk), partitionKey: key.pk, layout).item(sortKey: key.sk)
        }
    }

    /// The item as reads and conditions see it: nil when absent or past its ttl.
    func item(_ key: TableKey) throws(TableError) -> Item? {
        guard let item = try storedItem(key), !item.isExpired(now: now) else { return nil }
        return item
    }

    /// Every visible item of one partition whose sort key meets `sortKey` (nil: every item; the
    /// caller orders them). The keys are checked before any item is touched, and in a sorted
    /// file only those in the condition's range (a family's few tokens among a user's thousands);
    /// a segment whose family the condition rules out (a user's profile and identities, not its
    /// refresh tokens) is not even opened.
    func partition(_ partitionKey: String, sortKey condition: SortKeyCondition?) throws(TableError) -> [Item] {
        var items: [Item] = []
        func add(_ stored: KeyedPartition, _ wanted: (TableKey) -> Bool) throws(TableError) {
            for index in stored.candidates(condition) where wanted(stored.keys[index]) {
                guard !overlay.contains(stored.keys[index]), !stored.isExpired(index, now: now) else { continue }
                items.append(try stored.item(at: index))
            }
        }
        func matches(_ sortKey: String) -> Bool { condition?.matches(sortKey) ?? true }
        var segmented: [String] = []
        for prefix in layout.segmentPrefixes where condition?.mayMatch(prefix: prefix) ?? true {
            guard let segment = try StoreReader.segment(layout, partitionKey: partitionKey, prefix) else { continue }
            segmented.append(prefix)
            try add(segment) { matches($0.sk) }
        }
        let stored = try StoreReader.keyedPartition(layout.partitionPath(partitionKey), partitionKey: partitionKey, layout)
        // A family whose segment file exists is held there alone (the partition file may still
        // hold its items from before the partition's first checkpoint with segments).
        try add(stored) { key in
            matches(key.sk) && layout.segment(ofSortKey: key.sk).map(segmented.contains) != true
        }
        for (_, item) in try overlay.changes(where: { $0.pk.sameBytes(as: partitionKey) && matches($0.sk) }) {
            if let item, !item.isExpired(now: now) { items.append(item) }
        }
        return items
    }

    /// Every visible item whose GSI1PK is `indexPartitionKey`. Index entries only name candidates:
    /// each item's current GSI1PK decides, so a stale entry never shows a wrong item.
    func indexPartition(_ indexPartitionKey: String) throws(TableError) -> [Item] {
        let path = layout.indexPath(indexPartitionKey)
        var items: [Item] = []
        for key in try StoreReader.readIndex(path) {
            guard !overlay.contains(key) else { continue }
            if let item = try storedItem(key), IndexEntry(item)?.partitionKey.sameBytes(as: indexPartitionKey) == true { items.append(item) }
        }
        items += try overlay.changes().compactMap(\.item).filter { IndexEntry($0)?.partitionKey.sameBytes(as: indexPartitionKey) == true }
        return items.filter { !$0.isExpired(now: now) }
    }

    /// Every visible item whose partition key falls in `shard`.
    func shardItems(_ shard: String) throws(TableError) -> [Item] {
        let directory = layout.itemsRoot + "/" + shard
        var stored: [Item] = []
        var segmentFiles: Set<TableKey> = []  // (partition key, segment prefix)
        var partitionFiles: [[Item]] = []
        for name in try StoreReader.list(directory) where name.hasSuffix(".json") {
            let path = directory + "/" + name
            if let prefix = layout.segmentPrefix(ofFileName: name) {
                let items = try StoreReader.parsePartition(path, partitionKey: nil, segment: prefix, layout)
                if let partitionKey = items.first?["PK"]?.stringValue { segmentFiles.insert(TableKey(pk: partitionKey, sk: prefix)) }
                stored += items
            } else {
                partitionFiles.append(try StoreReader.parsePartition(path, partitionKey: nil, layout))
            }
        }
        for items in partitionFiles {
            stored += items.filter { item in
                guard let key = TableKey(item: item), let prefix = layout.segment(ofSortKey: key.sk) else { return true }
                return !segmentFiles.contains(TableKey(pk: key.pk, sk: prefix))
            }
        }
        return try merge(stored) { StoreLayout.shard($0.pk) == shard }
    }

    /// Stored items with the log's changes for keys matching `scope` applied; expired ones hidden.
    private func merge(_ stored: [Item], scope: (TableKey) -> Bool) throws(TableError) -> [Item] {
        var items = stored.filter { item in
            guard let key = TableKey(item: item), !overlay.contains(key) else { return false }
            return true
        }
        for (_, item) in try overlay.changes(where: scope) {
            if let item { items.append(item) }
        }
        return items.filter { !$0.isExpired(now: now) }
    }

    // MARK: - Files

    static func list(_ directory: String) throws(TableError) -> [String] {
        do {
            return try FileSystem.listDirectory(directory)
        } catch {
            if error.errno == ENOTDIR { throw .corrupted("\(directory): expected a directory") }
            throw .unavailable(error.description)
        }
    }

    static func readBytes(_ path: String) throws(TableError) -> [UInt8]? {
        do {
            return try FileSystem.readFile(path, limit: 64 << 20)
        } catch {
            if error.isNotFound { return nil }
            throw .unavailable(error.description)
        }
    }

    /// A partition file's items with their keys, parsed once per file version (see PartitionCache).
    /// Missing: an empty partition.
    static func keyedPartition(_ path: String, partitionKey: String, _ layout: StoreLayout) throws(TableError) -> KeyedPartition {
        try keyedPartition(path, FileIdentity(path), partitionKey: partitionKey, segment: nil, layout)
    }

    /// A segment's file (see `LocalStoreSchema.segmentPrefixes`), or nil when it has none: then the
    /// partition file holds that family's items, if any.
    static func segment(_ layout: StoreLayout, partitionKey: String, _ prefix: String) throws(TableError) -> KeyedPartition? {
        let path = layout.segmentPath(partitionKey, prefix)
        guard let identity = FileIdentity(path) else { return nil }
        return try keyedPartition(path, identity, partitionKey: partitionKey, segment: prefix, layout)
    }

    private static func keyedPartition(_ path: String, _ identity: FileIdentity?, partitionKey: String,
                                       segment: String?, _ layout: StoreLayout) throws(TableError) -> KeyedPartition {
        // No file: an empty partition, without an open that can only fail (a bulk import reads
        // three missing partitions per user before writing them).
        guard let identity else { return KeyedPartition([]) }
        if let cached = PartitionCache.shared.partition(path, identity) { return cached }
        let partition = try parseKeyedPartition(path, partitionKey: partitionKey, segment: segment, layout)
        PartitionCache.shared.store(path, identity, partition)
        return partition
    }

    /// A partition's (or a segment's) file as keys, ttls and item texts (`DynamoJSON.partitionEntries`),
    /// checked as `parsePartition` checks it; each item parsed when it is first used.
    static func parseKeyedPartition(_ path: String, partitionKey: String, segment: String?, _ layout: StoreLayout) throws(TableError) -> KeyedPartition {
        guard let bytes = try readBytes(path) else { return KeyedPartition([]) }
        let entries: [DynamoJSON.PartitionEntry]
        do {
            entries = try DynamoJSON.partitionEntries(bytes)
        } catch {
            throw .corrupted("\(path): \(error)")
        }
        var keys: [TableKey] = []
        keys.reserveCapacity(entries.count)
        for entry in entries {
            guard let pk = entry.partitionKey?.stringValue, let sk = entry.sortKey?.stringValue else { break }
            keys.append(TableKey(pk: pk, sk: sk))
        }
        try checkPlacement(path, keys: keys, count: entries.count, partitionKey: partitionKey, segment: segment, layout)
        let source = path
        return KeyedPartition(keys: keys, expiries: entries.map { Item.expiry(ttl: $0.ttl) },
                              items: entries.map { LazyItem(text: bytes[$0.text], source: source) })
    }

    /// A partition's file, or (`segment`: its prefix) one of its segments' files, checked: valid
    /// DynamoDB JSON, every item keyed, all in the partition (and segment) its name says.
    static func parsePartition(_ path: String, partitionKey: String?, segment: String? = nil, _ layout: StoreLayout) throws(TableError) -> [Item] {
        guard let bytes = try readBytes(path) else { return [] }
        let items: [Item]
        do {
            items = try DynamoJSON.partitionItems(bytes)
        } catch {
            throw .corrupted("\(path): \(error)")
        }
        try checkPlacement(path, keys: items.compactMap(TableKey.init(item:)), count: items.count, partitionKey: partitionKey, segment: segment, layout)
        return items
    }

    /// Every one of a file's `count` items is keyed (`keys` holds them all) and belongs to the
    /// partition (and segment) the file's name says.
    private static func checkPlacement(_ path: String, keys: [TableKey], count: Int, partitionKey: String?, segment: String?,
                                       _ layout: StoreLayout) throws(TableError) {
        guard let expected = partitionKey ?? keys.first?.pk else {
            guard count == 0 else { throw .corrupted("\(path): holds items without PK/SK") }
            return
        }
        let name = segment.map { layout.segmentPath(expected, $0) } ?? layout.partitionPath(expected)
        guard keys.count == count, path.hasSuffix(String(name.dropFirst(layout.itemsRoot.utf8.count))),
              keys.allSatisfy({ key in
                  // A partition file written before segments may hold their families' items.
                  key.pk.sameBytes(as: expected) && (segment == nil || layout.segment(ofSortKey: key.sk) == segment)
              }) else {
            throw .corrupted("\(path): holds items of another partition or segment, or items without PK/SK")
        }
    }

    static func readIndex(_ path: String) throws(TableError) -> [TableKey] {
        guard let bytes = try readBytes(path) else { return [] }
        do {
            var keys: [TableKey] = []
            for item in try DynamoJSON.indexKeys(bytes) {
                guard let key = TableKey(item: item) else {
                    throw DynamoJSONError(reason: "an index entry without PK/SK")
                }
                keys.append(key)
            }
            return keys
        } catch {
            throw .corrupted("\(path): \(error)")
        }
    }
}

/// Which version of a file this is. Partition files are only ever replaced by rename (never
/// rewritten in place), so a file with the same inode, size and modification time holds the
/// same bytes.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int

    init?(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modifiedSeconds = status.st_mtim.tv_sec
        modifiedNanoseconds = status.st_mtim.tv_nsec
    }
}

/// One partition file's items, with their keys precomputed and an index by sort key. An item
/// read from a file stays text until it is used; the next checkpoint of the partition copies the
/// text of the items it did not change (encoding every item again was most of a checkpoint's time
/// once a user had thousands of refresh tokens: 220 of 450 ms at 10,000 items).
struct KeyedPartition {
    let keys: [TableKey]
    private let items: [LazyItem]
    let positionBySortKey: [ExactString: Int]
    /// Each item's `ttl`, read once per file version: a query of a large partition checked every
    /// item's by parsing its text again.
    private let expiries: [Double?]
    /// The keys ascend (UTF-8 bytes), so a range of them is found by binary search.
    private let sorted: Bool

    init(_ items: [Item]) {
        // parsePartition checked every item has PK and SK.
        self.init(keys: items.map { TableKey(item: $0)! }, expiries: items.map(\.expiry), items: items.map(LazyItem.init))
    }

    init(keys: [TableKey], expiries: [Double?], items: [LazyItem]) {
        self.keys = keys
        self.items = items
        self.expiries = expiries
        // Checkpoints write keys in order; a file from elsewhere may not be.
        sorted = zip(keys, keys.dropFirst()).allSatisfy { $0.sk.utf8.lexicographicallyPrecedes($1.sk.utf8) }
        var positions: [ExactString: Int] = [:]
        positions.reserveCapacity(keys.count)
        for (index, key) in keys.enumerated() { positions[ExactString(key.sk)] = index }
        positionBySortKey = positions
    }

    var isEmpty: Bool { keys.isEmpty }

    func item(at index: Int) throws(TableError) -> Item { try items[index].item() }

    /// The item at `index` is past its `ttl` (as `Item.isExpired`).
    func isExpired(_ index: Int, now: Double) -> Bool {
        expiries[index].map { $0 < now } ?? false
    }

    /// The positions whose keys may meet `condition`, a range of them when the keys are sorted
    /// and the condition names a lower and an upper bound (the caller checks each key).
    func candidates(_ condition: SortKeyCondition?) -> Range<Int> {
        guard sorted, let bounds = condition?.bounds else { return keys.indices }
        func firstIndex(notBelow bound: [UInt8]) -> Int {
            var (low, high) = (0, keys.count)
            while low < high {
                let middle = (low + high) / 2
                if keys[middle].sk.utf8.lexicographicallyPrecedes(bound) { low = middle + 1 } else { high = middle }
            }
            return low
        }
        let start = firstIndex(notBelow: bounds.lower)
        let end = bounds.upper.map(firstIndex(notBelow:)) ?? keys.count
        return start..<max(start, end)
    }

    func item(sortKey: String) throws(TableError) -> Item? {
        guard let index = positionBySortKey[ExactString(sortKey)] else { return nil }
        return try item(at: index)
    }

    /// The items whose keys pass `keep`, their texts kept.
    func filtered(_ keep: (TableKey) -> Bool) -> KeyedPartition {
        let kept = keys.indices.filter { keep(keys[$0]) }
        guard kept.count < keys.count else { return self }
        return KeyedPartition(keys: kept.map { keys[$0] }, expiries: kept.map { expiries[$0] }, items: kept.map { items[$0] })
    }

    /// The partition with `changes` (by sort key; nil deletes) applied and expired items dropped,
    /// in sort-key order (UTF-8 bytes, as DynamoDB orders), every item with its text.
    func applying(_ changes: [ExactString: Item?], partitionKey: String, now: Double) -> KeyedPartition {
        var rows: [(key: TableKey, expiry: Double?, item: LazyItem)] = []
        rows.reserveCapacity(items.count + changes.count)
        for (index, key) in keys.enumerated() where !changes.keys.contains(ExactString(key.sk)) && !isExpired(index, now: now) {
            rows.append((key, expiries[index], items[index].withText()))
        }
        for case let (sortKey, item?) in changes where !item.isExpired(now: now) {
            rows.append((TableKey(pk: partitionKey, sk: sortKey.value), item.expiry, LazyItem(item).withText()))
        }
        // The stored items are in order already and the changes few: a near-linear sort.
        rows.sort { $0.key.sk.utf8.lexicographicallyPrecedes($1.key.sk.utf8) }
        return KeyedPartition(keys: rows.map(\.key), expiries: rows.map(\.expiry), items: rows.map(\.item))
    }

    /// `{"Items": [...]}`: each item's text as read, or as `DynamoJSON.encodedBytes` writes it.
    var fileBytes: [UInt8] {
        let texts = items.map { $0.withText().text }
        var bytes = Array(#"{"Items":["#.utf8)
        bytes.reserveCapacity(texts.reduce(16) { $0 + $1.count + 1 })
        for (index, text) in texts.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += text
        }
        bytes += Array("]}".utf8)
        return bytes
    }
}

/// Parsed partition files, so that one operation touching a partition several times (a refresh:
/// the index look-up, the user, the transaction's conditions) and a resident process's next
/// invocations parse it once. Bounded: past the limit the cache starts over.
final class PartitionCache: Sendable {
    static let shared = PartitionCache()
    static let limit = 512
    private let entries = Mutex<[String: (identity: FileIdentity, partition: KeyedPartition)]>([:])

    func partition(_ path: String, _ identity: FileIdentity) -> KeyedPartition? {
        entries.withLock { entries in
            guard let entry = entries[path], entry.identity == identity else { return nil }
            return entry.partition
        }
    }

    func store(_ path: String, _ identity: FileIdentity, _ partition: KeyedPartition) {
        entries.withLock { entries in
            if entries.count >= PartitionCache.limit { entries.removeAll(keepingCapacity: true) }
            entries[path] = (identity, partition)
        }
    }
}
