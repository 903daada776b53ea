import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif

// A GNU extension Glibc's module map leaves out.
@_silgen_name("memmem") private func memmem(_ haystack: UnsafeRawPointer?, _ haystackCount: Int,
                                            _ needle: UnsafeRawPointer?, _ needleCount: Int) -> UnsafeMutableRawPointer?

/// `<store>/changes`: the local store's DynamoDB Stream. One stream record
/// a line (`ItemChange.streamRecord`, view type NEW_AND_OLD_IMAGES), oldest first, bounded.
///
/// Why this shape: a commit's change record rides in the commit's own log record (its `at`,
/// `seq` and each item's `old` image, `WriteAheadLog.ChangeStamp`), so recording changes adds
/// no write and no `fdatasync` to a commit. A checkpoint, which runs off the request path,
/// moves the log's records here before it empties the log, inside the sync it does anyway.
/// Readers (`LocalTable.changeRecords()`) read this file and then the log's records not moved
/// yet, so they see every commit as soon as it is acknowledged.
///
/// What it keeps: what the opener's `ChangeLogFilter` (`LocalStoreSchema.changeLog`) keeps: some
/// item kinds, their images cut to what the log's readers read. A DynamoDB Stream carries every
/// attribute of every item for 24 hours inside AWS; this file is on the developer's disk, and a
/// copy of a secret an item holds (a sealed token, a token's hash, a key) would outlive whatever
/// promises that no such copy is left (re-encrypting the secrets, erasing an account).
///
/// Bounded as DynamoDB bounds a stream (it keeps 24 hours): past `maximumBytes` the oldest half
/// goes. An erasure (`eraseDeletedItems`) drops the records of the erased accounts' partitions
/// and every record naming such an account (`ChangeLogFilter.accountSortKey`, `accountID`).
enum ChangeLog {
    static let maximumBytes = 4 << 20
    static let sourceARN = "local:changes"

    static func path(_ layout: StoreLayout) -> String { layout.root + "/changes" }

    // MARK: - Reading

    /// Every change the store still remembers, oldest first: the file's, then the log's.
    static func read(_ layout: StoreLayout, _ filter: ChangeLogFilter) throws(TableError) -> [ItemChange] {
        guard let lock = try StoreLock.acquire(layout, exclusive: false) else { return [] }
        defer { lock.release() }
        var changes = try fileChanges(layout, filter)
        let last = changes.last?.orderingKey
        let descriptor = open(layout.walPath, O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            defer { close(descriptor) }
            for change in try logChanges(descriptor, path: layout.walPath, filter) where last.map({ change.orderingKey > $0 }) ?? true {
                changes.append(change)
            }
        }
        return changes
    }

    static func fileChanges(_ layout: StoreLayout, _ filter: ChangeLogFilter) throws(TableError) -> [ItemChange] {
        let path = path(layout)
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(path, limit: maximumBytes * 2)
        } catch where error.errno == ENOENT {
            return []
        } catch {
            throw .unavailable(error.description)
        }
        var changes: [ItemChange] = []
        for range in lineRanges(bytes) {
            let line = bytes[range]
            // A line cut by a crash mid-append was never part of an emptied log: the log still has it.
            guard let json = try? JSONValue.parse(Array(line)), let change = try? ItemChange(streamRecord: json) else { continue }
            // Cut again: a file written under a filter that kept more sheds the rest when it is
            // read, and at the rewrite its bound makes.
            if let kept = filter.kept(change) { changes.append(kept) }
        }
        return changes
    }

    /// The change records of the log's current generation, in commit order (a log of the first
    /// format, or records written before the change log existed, have none).
    static func logChanges(_ descriptor: Int32, path: String, _ filter: ChangeLogFilter) throws(TableError) -> [ItemChange] {
        var changes: [ItemChange] = []
        for payload in try logPayloads(descriptor, path: path) { changes += changesOf(payload: payload, filter) }
        return changes
    }

    static func logPayloads(_ descriptor: Int32, path: String) throws(TableError) -> [[UInt8]] {
        let header = try WriteAheadLog.readRange(descriptor, path: path, from: 0, count: WriteAheadLog.headerSize)
        guard header.count == WriteAheadLog.headerSize, Array(header[0..<8]) == WriteAheadLog.magic else { return [] }
        let generation = WriteAheadLog.integer(header[8..<16])
        var payloads: [[UInt8]] = []
        var offset = WriteAheadLog.headerSize
        while true {
            let head = try WriteAheadLog.readRange(descriptor, path: path, from: offset, count: WriteAheadLog.recordHeaderSize)
            guard head.count == WriteAheadLog.recordHeaderSize, !head.elementsEqual(WriteAheadLog.endMark),
                  WriteAheadLog.integer(head[4..<12]) == generation else { break }
            let length = Int(WriteAheadLog.integer(head[0..<4]))
            let payload = try WriteAheadLog.readRange(descriptor, path: path, from: offset + WriteAheadLog.recordHeaderSize, count: length)
            guard payload.count == length, Array(head[12..<20]) == WriteAheadLog.checksum(payload, generation: generation) else { break }
            payloads.append(payload)
            offset += WriteAheadLog.recordHeaderSize + length
        }
        return payloads
    }

    /// The stream records of one commit, of the items the filter keeps and cut to what it keeps
    /// of them; none for a record without a stamp. A change that left its item as it was gives none,
    /// as DynamoDB Streams gives none.
    static func changesOf(payload: [UInt8], _ filter: ChangeLogFilter) -> [ItemChange] {
        guard let json = try? JSONValue.parse(payload), let at = json["at"]?.int64Value,
              let sequence = json["seq"]?.int64Value, let entries = json["changes"]?.arrayValue else { return [] }
        var changes: [ItemChange] = []
        for (index, entry) in entries.enumerated() {
            guard let keyJSON = entry["key"], let keyItem = try? DynamoJSON.decodeItem(keyJSON), let key = TableKey(item: keyItem),
                  filter.keptAttributes(key) != nil else { continue }
            let new = entry["item"].flatMap { try? DynamoJSON.decodeItem($0) }
            let old = entry["old"].flatMap { try? DynamoJSON.decodeItem($0) }
            // The index stays the item's place in the commit, so a record's id never depends on
            // which kinds are kept.
            let suffix = String(100_000 + index).dropFirst()
            let sequenceNumber = String(sequence) + suffix
            guard let change = ItemChange(key: key, old: old, new: new, eventID: "local-" + sequenceNumber,
                                          sequenceNumber: sequenceNumber, committedAt: at),
                  let kept = filter.kept(change) else { continue }
            changes.append(kept)
        }
        return changes
    }

    // MARK: - Moving the log's records here (a checkpoint, under the exclusive lock)

    /// Appends the log's change records not here yet; when `erasing`, first rewrites the records
    /// of the erased partitions (`current` reads the store as the log leaves it). The
    /// checkpoint's sync that follows makes it durable; a crash before the log is emptied only
    /// means the next checkpoint finds them here already.
    static func absorb(_ descriptor: Int32, path walPath: String, _ layout: StoreLayout, _ filter: ChangeLogFilter,
                       erasing: Bool, current: StoreReader) throws(TableError) {
        let incoming = try logChanges(descriptor, path: walPath, filter)
        guard !incoming.isEmpty || erasing else { return }
        let path = path(layout)
        let last = try lastOrderingKey(path)
        let fresh = incoming.filter { change in last.map { change.orderingKey > $0 } ?? true }
        if erasing {
            try erase(path, fresh: fresh, filter, current: current)
            return
        }
        let size = fileSize(path)
        guard !fresh.isEmpty else { return }
        let freshLines = fresh.map(line)
        let freshSize = freshLines.reduce(0) { $0 + $1.count }
        if size + freshSize > maximumBytes {
            // Only the newest half stays: when this checkpoint's own records fill it (a bulk
            // import's do), the file's are not read and parsed only to be dropped.
            let older = freshSize >= maximumBytes / 2 ? [] : try fileChanges(layout, filter).map(line)
            try replace(path, with: trimmed(older + freshLines, force: older.isEmpty))
            return
        }
        var bytes = freshLines.flatMap { $0 }
        let file = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard file >= 0 else { throw .unavailable(FileSystem.Failure(path: path, operation: "open", errno: errno).description) }
        defer { close(file) }
        // After a line a crash cut short, start on a line of our own.
        if size > 0, let lastByte = try? WriteAheadLog.readRange(file, path: path, from: size - 1, count: 1), lastByte != [UInt8(ascii: "\n")] {
            bytes.insert(UInt8(ascii: "\n"), at: 0)
        }
        do throws(FileSystem.Failure) { try FileSystem.writeAll(file, bytes, path: path) } catch { throw .unavailable(error.description) }
    }

    /// An erasure's rewrite: the file without the records of erased accounts, then the log's
    /// fresh records without them. Account deletion runs it on every request, so the file (up to
    /// `maximumBytes`) is searched as bytes, not parsed: only its removals are parsed (to find
    /// accounts whose deletion a crash left unerased), and a line stays as written unless it
    /// names an erased account (its id, or its partition's key, anywhere in the line).
    static func erase(_ path: String, fresh: [ItemChange], _ filter: ChangeLogFilter, current: StoreReader) throws(TableError) {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(path, limit: maximumBytes * 2)
        } catch where error.errno == ENOENT {
            bytes = []
        } catch {
            throw .unavailable(error.description)
        }
        // Lines `line` wrote whole end with its last key; any other line (one a crash cut short,
        // or written by hand) is parsed, and goes if it does not parse.
        var lines: [(bytes: ArraySlice<UInt8>, change: ItemChange?)] = []
        for range in lineRanges(bytes) {
            let line = bytes[range]
            let whole = line.count > wholeLineEnd.count && line.suffix(wholeLineEnd.count).elementsEqual(wholeLineEnd)
            let removal = whole && contains(line, removalMark)
            guard !whole || removal else {
                lines.append((line, nil))
                continue
            }
            guard let json = try? JSONValue.parse(Array(line)), let change = try? ItemChange(streamRecord: json) else { continue }
            lines.append((line, change))
        }
        // An account's deletion removes its account item (`accountSortKey`) last, its other items
        // earlier; a deletion of leftovers whose account item went earlier removes none now: a
        // removal in a partition without one is that. Any other removal is a change of an account
        // that stays, and its records stay.
        var erased: Set<String> = []
        if let accountSortKey = filter.accountSortKey {
            let removals = lines.compactMap(\.change) + fresh
            erased = Set(removals.filter { $0.kind == .remove && $0.key.sk == accountSortKey }.map(\.key.pk))
            for pk in Set(fresh.filter { $0.kind == .remove }.map(\.key.pk)) where !erased.contains(pk) {
                if try current.storedItem(TableKey(pk: pk, sk: accountSortKey)) == nil { erased.insert(pk) }
            }
        }
        // No byte of an erased account may stay on disk, its id included: its records go, and so
        // does any other record that names it (a record of another partition kept before the
        // filter left that partition's kind out, say). A reader that was following the log has
        // read them already.
        let erasedAccounts = Set(erased.compactMap(filter.accountID))
        let names = erasedAccounts.map { Array($0.utf8) } + erased.map { Array($0.utf8) }
        func erasedRecord(_ line: ArraySlice<UInt8>) -> Bool { names.contains { contains(line, $0) } }
        var kept: [[UInt8]] = []
        for (line, change) in lines where !erasedRecord(line) {
            // A line that was not whole is written anew, under today's filter.
            if let change, !line.suffix(wholeLineEnd.count).elementsEqual(wholeLineEnd) {
                if let cut = filter.kept(change) { kept.append(Self.line(cut)) }
            } else {
                kept.append(Array(line) + [UInt8(ascii: "\n")])
            }
        }
        for change in fresh where !erased.contains(change.key.pk) && (erasedAccounts.isEmpty || !Self.names(change, anyOf: erasedAccounts)) {
            kept.append(line(change))
        }
        try replace(path, with: trimmed(kept))
    }

    /// How every line `line` writes ends (its keys are sorted; `eventVersion` is the last).
    static let wholeLineEnd = Array(#""eventVersion":"1.1"}"#.utf8)
    static let removalMark = Array(#""eventName":"REMOVE""#.utf8)

    /// Where the lines of `bytes` lie (newlines and empty lines left out), found with `memchr`:
    /// `split(separator:)` took a fifth of a deletion's time on a file of a few hundred kilobytes.
    static func lineRanges(_ bytes: [UInt8]) -> [Range<Int>] {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return [] }
            var ranges: [Range<Int>] = []
            var start = 0
            while start < buffer.count {
                let end = memchr(base + start, Int32(UInt8(ascii: "\n")), buffer.count - start)
                    .map { $0.assumingMemoryBound(to: UInt8.self) - UnsafeMutablePointer(mutating: base) } ?? buffer.count
                if end > start { ranges.append(start..<end) }
                start = end + 1
            }
            return ranges
        }
    }

    static func contains(_ haystack: ArraySlice<UInt8>, _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        return haystack.withUnsafeBytes { hay in
            needle.withUnsafeBytes { pin in memmem(hay.baseAddress, hay.count, pin.baseAddress, pin.count) != nil }
        }
    }

    /// Whether a record holds one of `accountIDs` in its key or in a string of its images: read
    /// from the values, without serializing the record.
    static func names(_ change: ItemChange, anyOf accountIDs: Set<String>) -> Bool {
        func holds(_ text: String) -> Bool { accountIDs.contains { text.contains($0) } }
        func holds(_ value: AttributeValue) -> Bool {
            switch value {
            case .s(let text): return holds(text)
            case .ss(let texts): return texts.contains(where: holds)
            case .m(let map): return map.values.contains(where: holds)
            case .l(let list): return list.contains(where: holds)
            case .n, .ns, .bool, .null: return false
            }
        }
        if holds(change.key.pk) || holds(change.key.sk) { return true }
        return [change.oldImage, change.newImage].contains { image in image?.values.contains(where: holds) == true }
    }

    static func line(_ change: ItemChange) -> [UInt8] {
        change.streamRecord(sourceARN: sourceARN).serializedBytes() + [UInt8(ascii: "\n")]
    }

    /// The newest half, when the file would pass its bound (`force`: it would, with lines
    /// already left out).
    static func trimmed(_ lines: [[UInt8]], force: Bool = false) -> [[UInt8]] {
        var lines = lines
        var total = lines.reduce(0) { $0 + $1.count }
        guard total > maximumBytes || force else { return lines }
        var drop = 0
        while drop < lines.count, total > maximumBytes / 2 {
            total -= lines[drop].count
            drop += 1
        }
        lines.removeFirst(drop)
        return lines
    }

    static func replace(_ path: String, with lines: [[UInt8]]) throws(TableError) {
        let temporary = path + ".tmp"
        let file = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard file >= 0 else { throw .unavailable(FileSystem.Failure(path: temporary, operation: "open", errno: errno).description) }
        do throws(FileSystem.Failure) {
            try FileSystem.writeAll(file, lines.flatMap { $0 }, path: temporary)
        } catch {
            close(file)
            throw .unavailable(error.description)
        }
        close(file)
        guard rename(temporary, path) == 0 else {
            throw .unavailable(FileSystem.Failure(path: path, operation: "rename onto", errno: errno).description)
        }
    }

    static func fileSize(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// The last whole line's sequence, read from the file's end.
    static func lastOrderingKey(_ path: String) throws(TableError) -> String? {
        let size = fileSize(path)
        guard size > 0 else { return nil }
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var window = 65_536
        while true {
            let start = max(0, size - window)
            let bytes = try WriteAheadLog.readRange(file, path: path, from: start, count: size - start)
            let lines = bytes.split(separator: UInt8(ascii: "\n"))
            for line in lines.reversed() {
                if let json = try? JSONValue.parse(Array(line)), let change = try? ItemChange(streamRecord: json) { return change.orderingKey }
            }
            if start == 0 { return nil }
            window *= 4
        }
    }
}

extension LocalTable {
    /// The store's change records, oldest first, as its `ChangeLogFilter` keeps them.
    public func changeRecords() throws(TableError) -> [ItemChange] {
        try ChangeLog.read(layout, schema.changeLog)
    }
}
