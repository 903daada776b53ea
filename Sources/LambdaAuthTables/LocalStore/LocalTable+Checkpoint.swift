import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif

@_silgen_name("syncfs") private func syncFileSystem(_ descriptor: Int32) -> Int32

/// Checkpoints: the log's changes moved into the partition and index files, after the response
/// (`StoreMaintenance`) or inline once the log is far past its threshold (see LocalTable, "When").
extension LocalTable {
    /// The checkpoint this process's writes left due, if the log is still past the threshold
    /// (another process may have done it since). Returns whether it checkpointed.
    @discardableResult
    public func checkpointIfDue() throws(TableError) -> Bool {
        try cachedLog.withLock { (cachedLog) throws(TableError) -> Bool in try checkpointIfDue(&cachedLog, force: false) }
    }

    /// A checkpoint whatever the log's size: the log's records of deleted items (and of what they
    /// held before) go, the log's file cut back to its header with them (a checkpoint otherwise
    /// leaves earlier generations' records in it, to be written over), and the files of
    /// partitions left empty are removed, names and all.
    public func eraseDeletedItems() throws(TableError) {
        _ = try cachedLog.withLock { (cachedLog) throws(TableError) -> Bool in try checkpointIfDue(&cachedLog, force: true) }
    }

    private func checkpointIfDue(_ cachedLog: inout WriteAheadLog.State?, force: Bool) throws(TableError) -> Bool {
        guard let lock = try StoreLock.acquire(layout, exclusive: true, creating: false) else { return false }
        defer { lock.release() }
        let descriptor = open(layout.walPath, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return false }
            throw ioFailure(layout.walPath, "open")
        }
        defer { close(descriptor) }
        var log = try WriteAheadLog.read(descriptor, path: layout.walPath, cached: cachedLog)
        cachedLog = log
        // An erasure also cuts back a log with nothing to move, when earlier generations' records
        // are still in its file.
        let erasable = force && log.fileSize > WriteAheadLog.headerSize + WriteAheadLog.endMark.count
        guard log.validEnd > (force ? WriteAheadLog.headerSize : checkpointThreshold) || erasable else { return false }
        do {
            try checkpoint(descriptor, &log, now: clock.now(), wipingTheLog: force)
            cachedLog = log
        } catch {
            cachedLog = nil
            throw error
        }
        return true
    }

    /// Moves the log's changes into the partition and index files, in two synced phases: new
    /// contents go to `.tmp` files, then renames replace the old files. Until the log is emptied
    /// it still holds every change, so a crash anywhere here loses nothing: each file is either
    /// its old or its new version, and the next checkpoint redoes the work. Rewriting a partition
    /// also drops its expired items, as DynamoDB's TTL sweeper would.
    func checkpoint(_ descriptor: Int32, _ log: inout WriteAheadLog.State, now: Double, wipingTheLog: Bool = false) throws(TableError) {
        var byPartition: [ExactString: [(TableKey, Item?)]] = [:]
        for (key, item) in try log.overlay.changes() { byPartition[ExactString(key.pk), default: []].append((key, item)) }
        var indexChanges: [ExactString: (added: Set<TableKey>, removed: Set<TableKey>)] = [:]
        var replacements: [(temporary: String, path: String)] = []
        var rewrittenPartitions: [(path: String, partition: KeyedPartition)] = []
        var removals: [String] = []
        var knownDirectories: Set<String> = []

        func stage(_ path: String, _ bytes: [UInt8]?) throws(TableError) {
            guard let bytes else {
                removals.append(path)
                return
            }
            let directory = FileSystem.parentDirectory(of: path)
            if !knownDirectories.contains(directory) {
                if mkdir(directory, 0o700) != 0, errno != EEXIST {
                    do throws(FileSystem.Failure) { try FileSystem.createDirectory(directory) } catch { throw .unavailable(error.description) }
                }
                knownDirectories.insert(directory)
            }
            let temporary = path + ".tmp"
            let file = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard file >= 0 else { throw ioFailure(temporary, "open") }
            defer { close(file) }
            do throws(FileSystem.Failure) { try FileSystem.writeAll(file, bytes, path: temporary) } catch { throw .unavailable(error.description) }
            replacements.append((temporary, path))
        }

        // In path order, so that files of one directory are created together: the file system
        // allocates a file's inode near its directory's, and a bulk import's 300,000 new files
        // in hash order took several times longer than the same files grouped by directory.
        let partitions = byPartition.map { (path: layout.partitionPath($0.key.value), key: $0.key, changes: $0.value) }
            .sorted { $0.path < $1.path }
        for (path, exactPartitionKey, changes) in partitions {
            let partitionKey = exactPartitionKey.value
            let stored = try StoreReader.keyedPartition(path, partitionKey: partitionKey, layout)
            // A family's segment file is looked for only where this checkpoint can touch it: a
            // change in the family, or family items still in the partition file to move out.
            var segments: [String: KeyedPartition] = [:]
            let changedFamilies = Set(changes.compactMap { layout.segment(ofSortKey: $0.0.sk) })
            for prefix in layout.segmentPrefixes
            where changedFamilies.contains(prefix) || stored.keys.contains(where: { layout.segment(ofSortKey: $0.sk) == prefix }) {
                segments[prefix] = try StoreReader.segment(layout, partitionKey: partitionKey, prefix)
            }
            func storedItem(_ sortKey: String) throws(TableError) -> Item? {
                if let prefix = layout.segment(ofSortKey: sortKey), let segment = segments[prefix] { return try segment.item(sortKey: sortKey) }
                return try stored.item(sortKey: sortKey)
            }
            var changedBySortKey: [String?: [ExactString: Item?]] = [:]
            for (key, item) in changes {
                let oldEntry = IndexEntry(try storedItem(key.sk)), newEntry = IndexEntry(item)
                if let oldEntry, newEntry.map({ oldEntry.partitionKey.sameBytes(as: $0.partitionKey) }) != true {
                    indexChanges[ExactString(oldEntry.partitionKey), default: ([], [])].removed.insert(key)
                }
                if let newEntry { indexChanges[ExactString(newEntry.partitionKey), default: ([], [])].added.insert(key) }
                changedBySortKey[layout.segment(ofSortKey: key.sk), default: [:]][ExactString(key.sk)] = .some(item)
            }
            func rewrite(_ path: String, _ base: KeyedPartition, _ changes: [ExactString: Item?]) throws(TableError) {
                let rewritten = base.applying(changes, partitionKey: partitionKey, now: now)
                try stage(path, rewritten.isEmpty ? nil : rewritten.fileBytes)
                if !rewritten.isEmpty { rewrittenPartitions.append((path, rewritten)) }
            }
            // Segments first: staged files are renamed in order, so a crash between the renames
            // never leaves a family's items out of both files (a segment file, once there,
            // holds its family alone; see StoreReader.partition).
            var movedOut = false
            for prefix in layout.segmentPrefixes {
                let family = stored.filtered { layout.segment(ofSortKey: $0.sk) == prefix }
                movedOut = movedOut || !family.isEmpty
                let changes = changedBySortKey[prefix] ?? [:]
                if let segment = segments[prefix] {
                    if !changes.isEmpty { try rewrite(layout.segmentPath(partitionKey, prefix), segment, changes) }
                } else if !changes.isEmpty || !family.isEmpty {
                    try rewrite(layout.segmentPath(partitionKey, prefix), family, changes)
                }
            }
            let ownChanges = changedBySortKey[nil] ?? [:]
            if !ownChanges.isEmpty || movedOut {
                try rewrite(path, stored.filtered { layout.segment(ofSortKey: $0.sk) == nil }, ownChanges)
            }
        }
        for (indexKey, change) in indexChanges {
            let path = layout.indexPath(indexKey.value)
            var keys = Set(try StoreReader.readIndex(path))
            keys.subtract(change.removed)
            keys.formUnion(change.added)
            let sorted = keys.sorted { LocalTable.precedes([$0.pk, $0.sk], [$1.pk, $1.sk]) }
            try stage(path, keys.isEmpty ? nil : JSONValue.object(["Keys": .array(sorted.map { DynamoJSON.encode($0.item) })]).serializedBytes())
        }
        // Before the log empties: the sync below makes the change log durable with the partitions.
        try ChangeLog.absorb(descriptor, path: layout.walPath, layout, schema.changeLog, erasing: wipingTheLog,
                             current: StoreReader(layout: layout, overlay: log.overlay, now: now))
        try syncStore()
        for (temporary, path) in replacements where rename(temporary, path) != 0 {
            throw ioFailure(path, "rename onto")
        }
        for path in removals where unlink(path) != 0 && errno != ENOENT {
            throw ioFailure(path, "unlink")
        }
        try syncStore()
        try resetLog(descriptor, &log, newFile: false, wiping: wipingTheLog)
        // Else this process's next read of a partition just written parses the whole file again
        // (the refresh after a checkpoint took 23 ms more at 300 tokens, growing with them).
        // The files were renamed under the exclusive lock still held, so these identities are
        // the versions written.
        for (path, partition) in rewrittenPartitions {
            if let identity = FileIdentity(path) { PartitionCache.shared.store(path, identity, partition) }
        }
    }

    private func syncStore() throws(TableError) {
        let root = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { throw ioFailure(directory, "open") }
        defer { close(root) }
        guard syncFileSystem(root) == 0 else { throw ioFailure(directory, "syncfs") }
    }
}
