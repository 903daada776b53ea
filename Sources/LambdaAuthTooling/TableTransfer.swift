import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

/// DynamoDB's import/export line format (`DYNAMODB_JSON`): one `{"Item": {...}}` per line. Used by
/// `authctl store export/import` and by the benchmark that fills a large table.
public enum TableTransfer {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Items committed per batch: each batch is one atomic, durable commit on the local store.
    public static let batchSize = 10_000

    public static func line(_ item: Item) -> [UInt8] {
        Array(#"{"Item":"#.utf8) + DynamoJSON.encodedBytes(item) + Array("}\n".utf8)
    }

    /// Writes every item to `descriptor`; returns how many.
    @discardableResult
    public static func export(_ table: any Table, to descriptor: Int32, path: String) throws -> Int {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        var count = 0
        func emit(_ item: Item) throws {
            buffer += line(item)
            count += 1
            if buffer.count >= 1 << 20 {
                try FileSystem.writeAll(descriptor, buffer, path: path)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        if let local = table as? LocalTable {
            try local.forEachItem(emit)
        } else {
            var start: Item?
            repeat {
                let page = try table.scan(limit: 1000, exclusiveStartKey: start)
                for item in page.items { try emit(item) }
                start = page.lastEvaluatedKey
            } while start != nil
        }
        try FileSystem.writeAll(descriptor, buffer, path: path)
        return count
    }

    /// Reads import lines from `descriptor` and puts them, a batch at a time (the local store's
    /// bulk path; item by item on other tables). A bad line stops the import with its number;
    /// batches before it stay imported.
    @discardableResult
    public static func importLines(from descriptor: Int32, path: String, into table: any Table) throws -> Int {
        var pending: [UInt8] = []
        var batch: [Item] = []
        var lineNumber = 0
        var imported = 0
        func flush() throws {
            if let local = table as? LocalTable {
                try local.importBatch(batch)
            } else {
                for item in batch { try table.putItem(item) }
            }
            imported += batch.count
            batch.removeAll(keepingCapacity: true)
        }
        func parse(_ line: ArraySlice<UInt8>) throws {
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
            do {
                batch.append(try DynamoJSON.exportLine(Array(line)))
            } catch {
                throw Failure(description: "\(path): line \(lineNumber): \(error) (\(imported) items imported before it)")
            }
            if batch.count >= batchSize { try flush() }
        }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw FileSystem.Failure(path: path, operation: "read", errno: errno) }
            if count == 0 { break }
            pending += chunk[0..<count]
            var lineStart = 0
            while let newline = pending[lineStart...].firstIndex(of: 0x0A) {
                try parse(pending[lineStart..<newline])
                lineStart = newline + 1
            }
            pending.removeFirst(lineStart)
        }
        if !pending.isEmpty { try parse(pending[...]) }
        if !batch.isEmpty { try flush() }
        return imported
    }
}
