#if canImport(Glibc)
import Glibc
#endif

/// What one operation sees of the store: the checkpointed item files with the write-ahead log's
/// changes laid over them, at one instant `now` (for ttl). Only ever reads.
struct StoreReader {
    let layout: StoreLayout
    let overlay: Overlay
    let now: Double

    /// The item as stored, expired or not.
    func storedItem(_ key: TableKey) throws(TableError) -> Item? {
        switch overlay.lookup(key) {
        case .changed(let item): return item
        case .unchanged: return try StoreReader.readItemFile(layout.itemPath(key), layout: layout)
        }
    }

    /// The item as reads and conditions see it: nil when absent or past its ttl.
    func item(_ key: TableKey) throws(TableError) -> Item? {
        guard let item = try storedItem(key), !item.isExpired(now: now) else { return nil }
        return item
    }

    /// Every visible item of one partition (table order is applied by the caller).
    func partition(_ partitionKey: String) throws(TableError) -> [Item] {
        let directory = layout.partitionDirectory(partitionKey)
        let changed = overlay.changes.filter { $0.key.pk == partitionKey }
        let superseded = Set(changed.keys.map(StoreLayout.itemFileName))
        var items: [Item] = []
        for name in try StoreReader.list(directory) where name.hasSuffix(".json") && !superseded.contains(name) {
            if let item = try StoreReader.readItemFile(directory + "/" + name, layout: layout) { items.append(item) }
        }
        items += changed.values.compactMap { $0 }
        return items.filter { !$0.isExpired(now: now) }
    }

    /// Every visible item whose GSI1PK is `indexPartitionKey`. Pointers only lead to candidates:
    /// each item's current GSI1PK decides, so a stale pointer never shows a wrong item.
    func indexPartition(_ indexPartitionKey: String) throws(TableError) -> [Item] {
        let directory = layout.indexDirectory(indexPartitionKey)
        let superseded = Set(overlay.changes.keys.map(StoreLayout.pointerFileName))
        var items: [Item] = []
        for name in try StoreReader.list(directory) where name.hasSuffix(".json") && !superseded.contains(name) {
            let path = directory + "/" + name
            guard let bytes = try StoreReader.readBytes(path) else { continue }
            guard let pointer = try? DynamoJSON.decodeItem(JSONValue.parse(bytes)), let key = TableKey(item: pointer) else {
                throw .corrupted("\(path): not a valid index entry")
            }
            if let item = try StoreReader.readItemFile(layout.itemPath(key), layout: layout),
               IndexEntry(item)?.partitionKey == indexPartitionKey {
                items.append(item)
            }
        }
        items += overlay.changes.values.compactMap { $0 }.filter { IndexEntry($0)?.partitionKey == indexPartitionKey }
        return items.filter { !$0.isExpired(now: now) }
    }

    /// Every visible item whose partition key falls in `shard`.
    func shardItems(_ shard: String) throws(TableError) -> [Item] {
        let shardDirectory = layout.itemsRoot + "/" + shard
        let changed = overlay.changes.filter { StoreLayout.shard($0.key.pk) == shard }
        let superseded = Set(changed.keys.map(layout.itemPath))
        var items: [Item] = []
        for partition in try StoreReader.list(shardDirectory) {
            let directory = shardDirectory + "/" + partition
            for name in try StoreReader.list(directory) where name.hasSuffix(".json") {
                let path = directory + "/" + name
                if superseded.contains(path) { continue }
                if let item = try StoreReader.readItemFile(path, layout: layout) { items.append(item) }
            }
        }
        items += changed.values.compactMap { $0 }
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
            return try FileSystem.readFile(path, limit: 1 << 20)
        } catch {
            if error.isNotFound { return nil }
            throw .unavailable(error.description)
        }
    }

    /// An item file, checked: valid DynamoDB JSON, and stored where its own key says it belongs.
    static func readItemFile(_ path: String, layout: StoreLayout) throws(TableError) -> Item? {
        guard let bytes = try readBytes(path) else { return nil }
        let item: Item
        do {
            item = try DynamoJSON.decodeItem(JSONValue.parse(bytes))
        } catch {
            throw .corrupted("\(path): \(error)")
        }
        guard let key = TableKey(item: item), layout.itemPath(key) == path else {
            throw .corrupted("\(path): the item's PK/SK do not match its file")
        }
        return item
    }
}
