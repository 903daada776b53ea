import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif

/// The commit path: every read and write of the table runs in one of these, under the store's
/// lock and on the log as this process last parsed it (see LocalTable for the design).
extension LocalTable {
    struct WriteBatch {
        let reader: StoreReader
        fileprivate(set) var changes: [(TableKey, Item?)] = []

        mutating func stage(_ key: TableKey, _ item: Item?) { changes.append((key, item)) }
    }

    func read<T: Sendable>(_ body: (StoreReader) throws(TableError) -> T) throws(TableError) -> T {
        try cachedLog.withLock { (cachedLog) throws(TableError) -> T in try read(&cachedLog, body) }
    }

    private func read<T>(_ cachedLog: inout WriteAheadLog.State?,
                         _ body: (StoreReader) throws(TableError) -> T) throws(TableError) -> T {
        let now = clock.now()
        guard let lock = try StoreLock.acquire(layout, exclusive: false) else {
            return try body(StoreReader(layout: layout, overlay: Overlay(), now: now))
        }
        defer { lock.release() }
        let descriptor = open(layout.walPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            guard errno == ENOENT else {
                throw .unavailable(FileSystem.Failure(path: layout.walPath, operation: "open", errno: errno).description)
            }
            return try body(StoreReader(layout: layout, overlay: Overlay(), now: now))
        }
        defer { close(descriptor) }
        let log = try WriteAheadLog.read(descriptor, path: layout.walPath, cached: cachedLog)
        cachedLog = log
        return try body(StoreReader(layout: layout, overlay: log.overlay, now: now))
    }

    /// `recordingChanges`: false for an import, which DynamoDB's own import does not stream either.
    func write<T: Sendable>(forceCheckpoint: Bool = false, recordingChanges: Bool = true,
                                    _ body: (inout WriteBatch) throws(TableError) -> T) throws(TableError) -> T {
        try cachedLog.withLock { (cachedLog) throws(TableError) -> T in
            try write(&cachedLog, forceCheckpoint: forceCheckpoint, recordingChanges: recordingChanges && recordsChanges, body)
        }
    }

    private func write<T>(_ cachedLog: inout WriteAheadLog.State?, forceCheckpoint: Bool, recordingChanges: Bool,
                          _ body: (inout WriteBatch) throws(TableError) -> T) throws(TableError) -> T {
        let now = clock.now()
        let lock = try StoreLock.acquire(layout, exclusive: true)!
        defer { lock.release() }
        // Nothing is created or truncated until there is something to commit: a failed condition
        // leaves every file as it was.
        var descriptor = open(layout.walPath, O_RDWR | O_CLOEXEC)
        defer { if descriptor >= 0 { close(descriptor) } }
        var log = WriteAheadLog.State(inode: 0, generation: 0, validEnd: 0, fileSize: 0, overlay: Overlay())
        if descriptor >= 0 {
            log = try WriteAheadLog.read(descriptor, path: layout.walPath, cached: cachedLog)
            cachedLog = log
        } else if errno != ENOENT {
            throw ioFailure(layout.walPath, "open")
        }
        var batch = WriteBatch(reader: StoreReader(layout: layout, overlay: log.overlay, now: now))
        let result = try body(&batch)
        guard !batch.changes.isEmpty else { return result }
        var stamp: WriteAheadLog.ChangeStamp?
        if recordingChanges {
            // The images before the commit: what a stream record's OldImage holds, for the items
            // the change log keeps, cut to what it keeps of them (the schema's `changeLog`;
            // ChangeLog.swift says why). The caller read these items to decide the write, so
            // they come from the caches.
            var oldImages: [Item?] = []
            oldImages.reserveCapacity(batch.changes.count)
            for (key, _) in batch.changes {
                guard let names = schema.changeLog.keptAttributes(key) else {
                    oldImages.append(nil)
                    continue
                }
                oldImages.append(try batch.reader.storedItem(key).map { $0.filter { names.contains($0.key) } })
            }
            // Real microseconds, for an order that holds across processes and checkpoints; never
            // below what the log already holds (a clock stepped back).
            let micros = UInt64(max(0, SystemClock().now() * 1_000_000))
            stamp = WriteAheadLog.ChangeStamp(committedAt: Int64((now * 1000).rounded(.down)),
                                              sequence: max(micros, log.lastSequence + 1), oldImages: oldImages)
        }
        var newFile = false
        if descriptor < 0 {
            descriptor = open(layout.walPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw ioFailure(layout.walPath, "create") }
            newFile = true
        }
        if log.isFirstFormat, log.validEnd > WriteAheadLog.headerSize {
            // A log of the first format: its records go to the partition files, and the log
            // starts again in this format (the batch was read on the same items).
            try checkpoint(descriptor, &log, now: now)
            cachedLog = log
        }
        if log.validEnd < WriteAheadLog.headerSize || log.isFirstFormat {
            try resetLog(descriptor, &log, newFile: newFile)
        }
        // Over the end mark and whatever follows it (an earlier generation's records), with a new
        // end mark after the record.
        let record = WriteAheadLog.encodeRecordWithEndMark(batch.changes, generation: log.generation, stamp: stamp)
        let written = record.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(log.validEnd)) }
        guard written == record.count, fdatasync(descriptor) == 0 else {
            let failure = ioFailure(layout.walPath, "append to")
            // A commit that failed must not take effect when a later read finds its record.
            _ = WriteAheadLog.endMark.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(log.validEnd)) }
            cachedLog = nil
            throw failure
        }
        // Acknowledged from here on: the record is on disk.
        for (key, item) in batch.changes { log.overlay.apply(key, item) }
        if let stamp { log.lastSequence = stamp.sequence }
        log.validEnd += record.count - WriteAheadLog.endMark.count
        log.fileSize = max(log.fileSize, log.validEnd + WriteAheadLog.endMark.count)
        cachedLog = log
        if forceCheckpoint || log.validEnd > checkpointThreshold * LocalTable.inlineCheckpointFactor {
            // The commit is acknowledged already; a checkpoint that cannot finish (a full disk, a
            // damaged partition file, which reads report with its path) is retried later.
            do {
                try checkpoint(descriptor, &log, now: now)
                cachedLog = log
            } catch {
                cachedLog = nil
            }
        } else if log.validEnd > checkpointThreshold {
            dueStores.add(directory: directory, clock: clock, schema: schema, checkpointThreshold: checkpointThreshold)
        }
        return result
    }

    func ioFailure(_ path: String, _ operation: String) -> TableError {
        .unavailable(FileSystem.Failure(path: path, operation: operation, errno: errno).description)
    }

    /// A fresh, empty log under a new generation, durably: the header and an end mark are written
    /// (36 bytes in one sector, so never torn); what follows is of earlier generations now, and
    /// the file keeps its length for the next commits to write over. Cut back to its header when `wiping` (an
    /// erasure: no byte of a deleted item may stay) and for a log of the first format, whose
    /// records carry no generation.
    func resetLog(_ descriptor: Int32, _ log: inout WriteAheadLog.State, newFile: Bool, wiping: Bool = false) throws(TableError) {
        let generation = log.generation &+ 1
        let header = WriteAheadLog.header(generation: generation)
        let written = header.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        guard written == header.count, !(wiping || log.isFirstFormat) || ftruncate(descriptor, off_t(WriteAheadLog.headerSize)) == 0,
              fdatasync(descriptor) == 0 else {
            throw ioFailure(layout.walPath, "reset")
        }
        if newFile {
            do throws(FileSystem.Failure) {
                try FileSystem.syncDirectory(directory)
                try FileSystem.syncDirectory(FileSystem.parentDirectory(of: directory))
            } catch {
                throw .unavailable(error.description)
            }
        }
        var status = stat()
        let known = fstat(descriptor, &status) == 0
        log = WriteAheadLog.State(inode: known ? UInt64(status.st_ino) : 0, generation: generation, validEnd: WriteAheadLog.headerSize,
                                  fileSize: known ? Int(status.st_size) : header.count, overlay: Overlay(), lastSequence: log.lastSequence)
    }
}
