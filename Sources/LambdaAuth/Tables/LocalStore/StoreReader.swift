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
            if let prefix = StoreLayout.segment(ofSortKey: key.sk),
               let segment = try StoreReader.segment(layout, partitionKey: key.pk, prefix) {
                return segment.item(sortKey: key.sk)
            }
            return try StoreReader.keyedPartition(layout.partitionPath(key.pk), partitionKey: key.pk).item(sortKey: key.sk)
        }
    }

    /// The item as reads and conditions see it: nil when absent or past its ttl.
    func item(_ key: TableKey) throws(TableError) -> Item? {
        guard let item = try storedItem(key), !item.isExpired(now: now) else { return nil }
        return item
    }

    /// Every visible item of one partition whose sort key passes `sortKeyFilter` (the caller
    /// orders them). Filtering on the precomputed keys first keeps a query that wants a few items
    /// of a large partition cheap; a segment whose family `mayHold` rules out (a user's profile
    /// and identities, not its thousand refresh tokens) is not even opened.
    func partition(_ partitionKey: String, sortKeyFilter: (String) -> Bool = { _ in true },
                   mayHold: (_ segmentPrefix: String) -> Bool = { _ in true }) throws(TableError) -> [Item] {
        var items: [Item] = []
        func add(_ stored: KeyedPartition, _ wanted: (TableKey) -> Bool) {
            for (index, key) in stored.keys.enumerated() where wanted(key) {
                guard !overlay.contains(key), !stored.isExpired(index, now: now) else { continue }
                items.append(stored.items[index])
            }
        }
        var segmented: [String] = []
        for prefix in StoreLayout.segmentPrefixes where mayHold(prefix) {
            guard let segment = try StoreReader.segment(layout, partitionKey: partitionKey, prefix) else { continue }
            segmented.append(prefix)
            add(segment) { sortKeyFilter($0.sk) }
        }
        let stored = try StoreReader.keyedPartition(layout.partitionPath(partitionKey), partitionKey: partitionKey)
        // A family whose segment file exists is held there alone (the partition file may still
        // hold its items from before the partition's first checkpoint with segments).
        add(stored) { key in
            sortKeyFilter(key.sk) && StoreLayout.segment(ofSortKey: key.sk).map(segmented.contains) != true
        }
        for (_, item) in try overlay.changes(where: { $0.pk.sameBytes(as: partitionKey) && sortKeyFilter($0.sk) }) {
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
            if let prefix = StoreLayout.segmentPrefix(ofFileName: name) {
                let items = try StoreReader.parsePartition(path, partitionKey: nil, segment: prefix)
                if let partitionKey = items.first?["PK"]?.stringValue { segmentFiles.insert(TableKey(pk: partitionKey, sk: prefix)) }
                stored += items
            } else {
                partitionFiles.append(try StoreReader.parsePartition(path, partitionKey: nil))
            }
        }
        for items in partitionFiles {
            stored += items.filter { item in
                guard let key = TableKey(item: item), let prefix = StoreLayout.segment(ofSortKey: key.sk) else { return true }
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
    static func keyedPartition(_ path: String, partitionKey: String) throws(TableError) -> KeyedPartition {
        try keyedPartition(path, FileIdentity(path), partitionKey: partitionKey, segment: nil)
    }

    /// A segment's file (see `StoreLayout.segmentPrefixes`), or nil when it has none: then the
    /// partition file holds that family's items, if any.
    static func segment(_ layout: StoreLayout, partitionKey: String, _ prefix: String) throws(TableError) -> KeyedPartition? {
        let path = layout.segmentPath(partitionKey, prefix)
        guard let identity = FileIdentity(path) else { return nil }
        return try keyedPartition(path, identity, partitionKey: partitionKey, segment: prefix)
    }

    private static func keyedPartition(_ path: String, _ identity: FileIdentity?, partitionKey: String,
                                       segment: String?) throws(TableError) -> KeyedPartition {
        if let identity, let cached = PartitionCache.shared.partition(path, identity) { return cached }
        let partition = KeyedPartition(try parsePartition(path, partitionKey: partitionKey, segment: segment))
        if let identity { PartitionCache.shared.store(path, identity, partition) }
        return partition
    }

    /// A partition's file, or (`segment`: its prefix) one of its segments' files, checked: valid
    /// DynamoDB JSON, every item keyed, all in the partition (and segment) its name says.
    static func parsePartition(_ path: String, partitionKey: String?, segment: String? = nil) throws(TableError) -> [Item] {
        guard let bytes = try readBytes(path) else { return [] }
        let items: [Item]
        do {
            items = try DynamoJSON.partitionItems(bytes)
        } catch {
            throw .corrupted("\(path): \(error)")
        }
        guard let expected = partitionKey ?? items.first?["PK"]?.stringValue else { return items }
        let layout = StoreLayout(root: "")
        let name = segment.map { layout.segmentPath(expected, $0) } ?? layout.partitionPath(expected)
        guard path.hasSuffix(String(name.dropFirst(layout.itemsRoot.utf8.count))),
              items.allSatisfy({ item in
                  guard let key = TableKey(item: item), key.pk.sameBytes(as: expected) else { return false }
                  // A partition file written before segments may hold their families' items.
                  return segment == nil || StoreLayout.segment(ofSortKey: key.sk) == segment
              }) else {
            throw .corrupted("\(path): holds items of another partition or segment, or items without PK/SK")
        }
        return items
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

/// One partition file's items, with their keys precomputed and an index by sort key.
struct KeyedPartition {
    let items: [Item]
    let keys: [TableKey]
    let positionBySortKey: [ExactString: Int]
    /// Each item's `ttl`, read once per file version: a query of a large partition checked every
    /// item's by parsing its text again.
    private let expiries: [Double?]
    /// Each item's DynamoDB JSON, when this process wrote the file: the next checkpoint of the
    /// partition copies the bytes of the items it did not change. Encoding every item again
    /// was most of a checkpoint's time once a user had thousands of refresh tokens (220 of
    /// 450 ms at 10,000 items, and 80 more to build the JSON values).
    let encodedItems: [[UInt8]]?

    init(_ items: [Item]) {
        // parsePartition checked every item has PK and SK.
        self.init(items: items, keys: items.map { TableKey(item: $0)! }, encodedItems: nil)
    }

    private init(items: [Item], keys: [TableKey], encodedItems: [[UInt8]]?) {
        self.items = items
        self.keys = keys
        self.encodedItems = encodedItems
        var positions: [ExactString: Int] = [:]
        positions.reserveCapacity(keys.count)
        for (index, key) in keys.enumerated() { positions[ExactString(key.sk)] = index }
        positionBySortKey = positions
        expiries = items.map(\.expiry)
    }

    /// The item at `index` is past its `ttl` (as `Item.isExpired`).
    func isExpired(_ index: Int, now: Double) -> Bool {
        expiries[index].map { $0 < now } ?? false
    }

    func item(sortKey: String) -> Item? {
        positionBySortKey[ExactString(sortKey)].map { items[$0] }
    }

    /// The items whose keys pass `keep`, their encoded bytes kept.
    func filtered(_ keep: (TableKey) -> Bool) -> KeyedPartition {
        let kept = keys.indices.filter { keep(keys[$0]) }
        guard kept.count < keys.count else { return self }
        return KeyedPartition(items: kept.map { items[$0] }, keys: kept.map { keys[$0] }, encodedItems: encodedItems.map { encoded in kept.map { encoded[$0] } })
    }

    /// The partition with `changes` (by sort key; nil deletes) applied and expired items dropped,
    /// in sort-key order (UTF-8 bytes, as DynamoDB orders), every item encoded.
    func applying(_ changes: [ExactString: Item?], partitionKey: String, now: Double) -> KeyedPartition {
        var rows: [(key: TableKey, item: Item, encoded: [UInt8]?)] = []
        rows.reserveCapacity(items.count + changes.count)
        for (index, key) in keys.enumerated() where !changes.keys.contains(ExactString(key.sk)) && !isExpired(index, now: now) {
            rows.append((key, items[index], encodedItems?[index]))
        }
        for case let (sortKey, item?) in changes where !item.isExpired(now: now) {
            rows.append((TableKey(pk: partitionKey, sk: sortKey.value), item, nil))
        }
        // The stored items are in order already and the changes few: a near-linear sort.
        rows.sort { $0.key.sk.utf8.lexicographicallyPrecedes($1.key.sk.utf8) }
        return KeyedPartition(items: rows.map(\.item), keys: rows.map(\.key),
                              encodedItems: rows.map { $0.encoded ?? DynamoJSON.encodedBytes($0.item) })
    }

    /// `{"Items": [...]}`, byte for byte what serialising the whole document would give.
    var fileBytes: [UInt8] {
        let encoded = encodedItems ?? items.map(DynamoJSON.encodedBytes)
        var bytes = Array(#"{"Items":["#.utf8)
        bytes.reserveCapacity(encoded.reduce(16) { $0 + $1.count + 1 })
        for (index, item) in encoded.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += item
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
