import LambdaAuthVerifier
import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// The items a sequence of commits changed: after-images, nil for a deletion. Those read from
/// the log stay bytes until something looks at them (`LoggedChange`).
struct Overlay {
    private var entries: [TableKey: LoggedChange] = [:]

    enum Lookup {
        case unchanged
        case changed(Item?)
    }

    func lookup(_ key: TableKey) throws(TableError) -> Lookup {
        guard let change = entries[key] else { return .unchanged }
        return .changed(try change.item())
    }

    /// Whether `key` has a change, without parsing it.
    func contains(_ key: TableKey) -> Bool { entries[key] != nil }

    /// The changes whose keys pass `scope`, parsed.
    func changes(where scope: (TableKey) -> Bool = { _ in true }) throws(TableError) -> [(key: TableKey, item: Item?)] {
        var changes: [(key: TableKey, item: Item?)] = []
        for (key, change) in entries where scope(key) { changes.append((key, try change.item())) }
        return changes
    }

    mutating func apply(_ key: TableKey, _ item: Item?) {
        entries[key] = LoggedChange(item)
    }

    mutating func apply(_ key: TableKey, _ change: LoggedChange) {
        entries[key] = change
    }

    var isEmpty: Bool { entries.isEmpty }
}

/// One after-image (nil: a deletion), as written by this process or as bytes of a log record.
struct LoggedChange: Sendable {
    private let afterImage: LazyItem?

    init(_ item: Item?) {
        afterImage = item.map(LazyItem.init)
    }

    /// The after-image at `range` of a record's payload (nil: a deletion), read from `source`.
    init(record: [UInt8], range: Range<Int>?, source: String) {
        afterImage = range.map { LazyItem(text: record[$0], source: source + ", a log record") }
    }

    func item() throws(TableError) -> Item? { try afterImage?.item() }
}

/// `<store>/wal`: a 16-byte header (magic, generation) then records of
/// `length (4, LE) | generation (8, LE) | checksum (8: SHA-256 of generation and payload) | payload`,
/// the payload `{"changes": [{"key": {...}, "item": {...}}, ...]}` of one commit (no `item`:
/// deleted), the last one followed by an end mark (a record header of zeros). A checkpoint starts
/// the next generation by rewriting the header and an end mark after it: the file keeps its
/// length, and the next commits overwrite the records of earlier generations in place, each
/// written with an end mark after it in the same write. So what follows the last record is an end
/// mark, or a record torn by a crash while it was written (never acknowledged), or damage. Appending past the end of the
/// file made every commit's `fdatasync` write the inode too (its size changed): on this machine's
/// disk a 4 KB commit synced in 124 µs appended and 71 µs written over (docs/local-store.md). A
/// process keeps what it parsed of the log and reads only what follows on its next operation.
package enum WriteAheadLog {
    static let magic = Array("LAWAL002".utf8)
    /// The first format: records without a generation, the file cut back at every checkpoint.
    /// Still read; the next write checkpoints such a log and starts one of this format.
    static let firstFormatMagic = Array("LAWAL001".utf8)
    static let headerSize = 16
    static let recordHeaderSize = 20
    /// What follows the last record: a record header of zeros (no generation is 0).
    static let endMark = [UInt8](repeating: 0, count: recordHeaderSize)
    static let firstFormatRecordHeaderSize = 12

    package struct State {
        var inode: UInt64
        var generation: UInt64
        /// End of the last complete record.
        package var validEnd: Int
        var fileSize: Int
        var overlay: Overlay
        var isFirstFormat = false
        /// The highest change-record sequence (`seq`) this log holds, or held before its last
        /// reset in this process: the next commit's is above it.
        var lastSequence: UInt64 = 0
    }

    /// What a commit's record carries for the change log (LocalStore/ChangeLog.swift): when it
    /// committed (the table's clock, epoch milliseconds), its place in the store's order, and
    /// each item's image before the commit, for the items the change log keeps and cut to what
    /// it keeps of them (nil for the others). It rides in the commit's own record, so the change log
    /// costs no write and no sync of its own.
    struct ChangeStamp {
        var committedAt: Int64
        var sequence: UInt64
        var oldImages: [Item?]
    }

    static func checksum(_ payload: some Collection<UInt8>, generation: UInt64?) -> [UInt8] {
        let salt = generation.map(littleEndian) ?? []
        return Array(SHA256.hash(data: salt + Array(payload)).bytes.prefix(8))
    }

    static func littleEndian(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    static func integer(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// The header, with an end mark after it: the log of a new generation, empty.
    static func header(generation: UInt64) -> [UInt8] {
        magic + littleEndian(generation) + endMark
    }

    static func encodeRecord(_ changes: [(TableKey, Item?)], generation: UInt64, stamp: ChangeStamp? = nil) -> [UInt8] {
        // What serialising the JSONValue would give (members sorted: "at" before "changes" before
        // "seq", "item" before "key" before "old").
        var payload = Array("{".utf8)
        if let stamp { payload += Array(#""at":\#(stamp.committedAt),"#.utf8) }
        payload += Array(#""changes":["#.utf8)
        for (position, (key, item)) in changes.enumerated() {
            payload += Array((position > 0 ? ",{" : "{").utf8)
            if let item {
                payload += Array(#""item":"#.utf8)
                DynamoJSON.write(item, to: &payload)
                payload.append(UInt8(ascii: ","))
            }
            payload += Array(#""key":"#.utf8)
            DynamoJSON.write(key.item, to: &payload)
            if let stamp, position < stamp.oldImages.count, let old = stamp.oldImages[position] {
                payload += Array(#","old":"#.utf8)
                DynamoJSON.write(old, to: &payload)
            }
            payload.append(UInt8(ascii: "}"))
        }
        payload += Array("]".utf8)
        if let stamp { payload += Array(#","seq":\#(stamp.sequence)"#.utf8) }
        payload += Array("}".utf8)
        let length = UInt32(payload.count).littleEndian
        return withUnsafeBytes(of: length) { Array($0) } + littleEndian(generation) + checksum(payload, generation: generation) + payload
    }

    /// A record as it is written: with the end mark after it.
    static func encodeRecordWithEndMark(_ changes: [(TableKey, Item?)], generation: UInt64, stamp: ChangeStamp? = nil) -> [UInt8] {
        encodeRecord(changes, generation: generation, stamp: stamp) + endMark
    }

    /// A record's `seq`, the payload's last member when it has one (read from its end, so the
    /// log's parse stays lazy).
    static func sequence(ofPayload payload: ArraySlice<UInt8>) -> UInt64? {
        guard payload.last == UInt8(ascii: "}") else { return nil }
        var value: UInt64 = 0, scale: UInt64 = 1
        var index = payload.index(before: payload.endIndex)
        var digits = 0
        while index > payload.startIndex {
            index = payload.index(before: index)
            let byte = payload[index]
            guard byte >= 48, byte <= 57 else { break }
            value += UInt64(byte - 48) * scale
            scale &*= 10
            digits += 1
            if digits > 19 { return nil }
        }
        let marker = Array(#""seq":"#.utf8)
        guard digits > 0, index - payload.startIndex >= marker.count - 1,
              payload[(index - marker.count + 1)...index].elementsEqual(marker) else { return nil }
        return value
    }

    /// Reads the log from `descriptor`, continuing from `cached` when it is the same file and
    /// generation. The log ends at an end mark (or the end of the file), or at a record torn by a
    /// crash mid-write (never acknowledged); anything else where a record or an end mark belongs
    /// is damage: a whole record of another generation, or any bytes with a whole record of the
    /// log's generation after them.
    package static func read(_ descriptor: Int32, path: String, cached: State?) throws(TableError) -> State {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw .unavailable(FileSystem.Failure(path: path, operation: "fstat", errno: errno).description)
        }
        let inode = UInt64(status.st_ino)
        let size = Int(status.st_size)
        guard size >= headerSize else {
            // Created but its header never reached the disk: an empty log.
            return State(inode: inode, generation: 0, validEnd: 0, fileSize: size, overlay: Overlay())
        }
        let headerBytes = try readRange(descriptor, path: path, from: 0, count: headerSize)
        let isFirstFormat = Array(headerBytes[0..<8]) == firstFormatMagic
        guard isFirstFormat || Array(headerBytes[0..<8]) == magic else { throw .corrupted("\(path): not a write-ahead log (bad magic)") }
        let generation = integer(headerBytes[8..<16])
        var state: State
        if let cached, cached.inode == inode, cached.generation == generation, cached.isFirstFormat == isFirstFormat,
           cached.validEnd <= size, cached.validEnd >= headerSize {
            state = cached
        } else {
            state = State(inode: inode, generation: generation, validEnd: headerSize, fileSize: size, overlay: Overlay(),
                          isFirstFormat: isFirstFormat)
        }
        state.fileSize = size
        if isFirstFormat { return try readFirstFormatRecords(descriptor, path: path, state) }
        while state.validEnd + recordHeaderSize <= size {
            let head = try readRange(descriptor, path: path, from: state.validEnd, count: recordHeaderSize)
            if head.elementsEqual(endMark) { break }
            let claimed = integer(head[4..<12])
            let end = state.validEnd + recordHeaderSize + Int(integer(head[0..<4]))
            let payload = end <= size ? try readRange(descriptor, path: path, from: state.validEnd + recordHeaderSize, count: end - state.validEnd - recordHeaderSize) : []
            let whole = end <= size && Array(head[12..<20]) == checksum(payload, generation: claimed)
            guard whole, claimed == generation else {
                let damaged = whole ? true : try recordFollows(descriptor, path: path, after: state.validEnd, size: size, generation: generation)
                if damaged {
                    throw .corrupted("\(path): damaged record at byte \(state.validEnd) (generation \(generation))")
                }
                break
            }
            do {
                try applyRecord(payload[...], to: &state.overlay, source: path)
            } catch {
                throw .corrupted("\(path): unreadable record at byte \(state.validEnd): \(error)")
            }
            if let sequence = sequence(ofPayload: payload[...]) { state.lastSequence = max(state.lastSequence, sequence) }
            state.validEnd = end
        }
        return state
    }

    /// Whether a whole record of `generation` starts anywhere past `offset`: only the record a
    /// crash cut short can fail its checksum with none after it (the next commit writes over it).
    private static func recordFollows(_ descriptor: Int32, path: String, after offset: Int, size: Int,
                                      generation: UInt64) throws(TableError) -> Bool {
        let bytes = try readRange(descriptor, path: path, from: offset + 1, count: size - offset - 1)
        var start = 0
        while start + recordHeaderSize <= bytes.count {
            defer { start += 1 }
            guard integer(bytes[(start + 4)..<(start + 12)]) == generation else { continue }
            let end = start + recordHeaderSize + Int(integer(bytes[start..<(start + 4)]))
            if end <= bytes.count, Array(bytes[(start + 12)..<(start + 20)]) == checksum(bytes[(start + recordHeaderSize)..<end], generation: generation) {
                return true
            }
        }
        return false
    }

    /// The first format's records from `state.validEnd` to the end of the file.
    private static func readFirstFormatRecords(_ descriptor: Int32, path: String, _ state: State) throws(TableError) -> State {
        var state = state
        guard state.validEnd < state.fileSize else { return state }
        let bytes = try readRange(descriptor, path: path, from: state.validEnd, count: state.fileSize - state.validEnd)
        var position = 0
        while position < bytes.count {
            let remaining = bytes.count - position
            if remaining < firstFormatRecordHeaderSize { break }
            let length = Int(integer(bytes[position..<position + 4]))
            let end = position + firstFormatRecordHeaderSize + length
            if end > bytes.count { break }
            let payload = bytes[(position + firstFormatRecordHeaderSize)..<end]
            if Array(bytes[(position + 4)..<(position + 12)]) != checksum(payload, generation: nil) {
                // A crash mid-append leaves the record's tail (and anything after) unwritten or zero.
                if end == bytes.count || bytes[position...].allSatisfy({ $0 == 0 }) { break }
                throw .corrupted("\(path): checksum mismatch in the record at byte \(state.validEnd + position)")
            }
            do {
                try applyRecord(payload, to: &state.overlay, source: path)
            } catch {
                throw .corrupted("\(path): unreadable record at byte \(state.validEnd + position): \(error)")
            }
            position = end
        }
        state.validEnd += position
        return state
    }

    private static func applyRecord(_ payload: ArraySlice<UInt8>, to overlay: inout Overlay, source: String) throws -> Void {
        let record = Array(payload)
        for change in try DynamoJSON.logChangeRanges(record) {
            guard let key = TableKey(item: change.key) else { throw DynamoJSONError(reason: "a change without a key") }
            overlay.apply(key, LoggedChange(record: record, range: change.item, source: source))
        }
    }

    static func readRange(_ descriptor: Int32, path: String, from offset: Int, count: Int) throws(TableError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(offset + filled)) }
            if got < 0, errno == EINTR { continue }
            if got < 0 { throw .unavailable(FileSystem.Failure(path: path, operation: "read", errno: errno).description) }
            if got == 0 { return Array(buffer[0..<filled]) }
            filled += got
        }
        return buffer
    }
}
