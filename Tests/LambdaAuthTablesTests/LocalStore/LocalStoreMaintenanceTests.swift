@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The checkpoint off the request path: writes only append until the cap, maintenance does the
/// rewriting, and a rewritten partition is exactly its items whichever way it was produced.
@Suite struct LocalStoreMaintenanceTests {
    static let now: Int64 = 1_800_000_000
    static let threshold = 2048
    static var cap: Int { threshold * LocalTable.inlineCheckpointFactor }

    /// A store with a small threshold and its own record of due stores (so that no other test's
    /// maintenance runs this one's).
    private func withStore(_ body: (String, LocalTable, DueStores) throws -> Void) throws {
        let root = TestSupport.temporaryDirectory("local-maintenance")
        defer { TestSupport.removeTree(root) }
        let due = DueStores()
        let table = LocalTable(directory: root + "/store", clock: FixedClock(Double(Self.now)),
                               checkpointThreshold: Self.threshold, dueStores: due)
        try body(root + "/store", table, due)
    }

    private func walSize(_ directory: String) -> Int { logLength(ofStoreAt: directory) }

    private func walFileSize(_ directory: String) -> Int {
        var status = stat()
        return stat(directory + "/wal", &status) == 0 ? Int(status.st_size) : 0
    }

    private static func item(_ index: Int) -> Item {
        var item = TableKey(pk: "USER#\(index % 7)", sk: "TOKEN#\(index)").item
        item["payload"] = .s(String(repeating: "p", count: 200))
        return item
    }

    @Test func writesBelowTheCapOnlyAppendAndMaintenanceCheckpoints() throws {
        try withStore { directory, table, due in
            var written = 0
            while walSize(directory) <= Self.threshold {
                try table.putItem(Self.item(written))
                written += 1
            }
            for _ in 0..<3 {
                try table.putItem(Self.item(written))
                written += 1
            }
            let size = walSize(directory)
            #expect(size > Self.threshold && size < Self.cap)
            #expect(!FileSystem.exists(directory + "/items"), "a write below the cap rewrote partitions")
            #expect(due.count == 1, "the writes past the threshold did not ask for maintenance")

            #expect(due.runDue().isEmpty)
            #expect(walSize(directory) == WriteAheadLog.headerSize, "maintenance did not empty the log")
            #expect(walFileSize(directory) == size + WriteAheadLog.endMark.count, "the file keeps its length for the next commits to write over")
            #expect(FileSystem.exists(StoreLayout(root: directory).partitionPath("USER#0")))
            #expect(due.count == 0)
            #expect(try table.checkpointIfDue() == false, "a checkpoint with nothing due")

            let reopened = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            for index in 0..<written {
                #expect(try reopened.getItem(TableKey(pk: "USER#\(index % 7)", sk: "TOKEN#\(index)")) == Self.item(index))
            }
            let never = FileSystem.parentDirectory(of: directory) + "/never"
            #expect(try LocalTable(directory: never, clock: SystemClock()).checkpointIfDue() == false)
            #expect(!FileSystem.exists(never), "maintenance of a store never written created it")
        }
    }

    @Test func theLogStaysBoundedWhenMaintenanceNeverRuns() throws {
        try withStore { directory, table, _ in
            var largest = 0, previous = 0, inlineCheckpoints = 0
            for index in 0..<300 {
                try table.putItem(Self.item(index))
                let size = walSize(directory)
                largest = max(largest, size)
                if size < previous { inlineCheckpoints += 1 }
                previous = size
            }
            #expect(largest <= Self.cap, "the log grew past the cap: \(largest) bytes")
            #expect(walFileSize(directory) <= Self.cap + 1024, "the file grew past the cap: later logs did not write over earlier ones")
            #expect(largest > 2 * Self.threshold, "writes checkpointed before the cap")
            #expect(inlineCheckpoints >= 5)
            let reopened = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            var count = 0
            try reopened.forEachItem { _ in count += 1 }
            #expect(count == 300)
        }
    }

    /// A partition rewritten from a parsed file, then again from the bytes the first rewrite kept,
    /// is each time exactly the canonical JSON of its live items in sort-key (UTF-8 byte) order:
    /// updates and deletions applied, expired items dropped, new keys merged in place.
    @Test func aRewrittenPartitionIsExactlyItsLiveItemsInOrder() throws {
        try withStore { directory, table, _ in
            let partitionKey = "USER#order"
            func item(_ sortKey: String, _ attributes: [String: AttributeValue] = [:]) -> Item {
                var item = TableKey(pk: partitionKey, sk: sortKey).item
                for (name, value) in attributes { item[name] = value }
                return item
            }
            func checkFile(_ root: String, holds expected: [String: Item], _ step: String) throws {
                let live = expected.values.sorted { $0["SK"]!.stringValue!.utf8.lexicographicallyPrecedes($1["SK"]!.stringValue!.utf8) }
                let canonical = JSONValue.object(["Items": .array(live.map(DynamoJSON.encode))]).serializedBytes()
                let stored = try FileSystem.readFile(StoreLayout(root: root).partitionPath(partitionKey))
                #expect(stored == canonical, "\(step): \(String(decoding: stored, as: UTF8.self))")
            }

            let first = ["b", "d", "f", "a#1", "Z", "é", "e"].map { item($0, ["note": .s("quote \" and \\ here")]) }
            let imported = Dictionary(uniqueKeysWithValues: first.map { ($0["SK"]!.stringValue!, $0) })
            try table.importBatch(first)
            try checkFile(directory, holds: imported, "imported")

            // A copy elsewhere is a file this process never wrote: its rewrite encodes every item.
            let copy = FileSystem.parentDirectory(of: directory) + "/copy"
            try FileSystem.createDirectory(copy)
            try copyTree(directory, copy)

            for store in [directory, copy] {
                let writer = store == directory ? table : LocalTable(directory: store, clock: FixedClock(Double(Self.now)),
                                                                  checkpointThreshold: Self.threshold, dueStores: DueStores())
                var changes = imported
                changes["d"] = item("d", ["note": .s("updated")])
                try writer.putItem(changes["d"]!)
                changes["f"] = nil
                try writer.deleteItem(TableKey(pk: partitionKey, sk: "f"))
                try writer.updateItem(TableKey(pk: partitionKey, sk: "e"), update: "SET #ttl = :past", condition: nil,
                                      attributes: .init(names: ["#ttl": "ttl"], values: [":past": .n(Self.now - 1)]), returnValues: .none)
                changes["e"] = nil
                try writer.putItem(item("x", ["ttl": .n(Self.now - 5)]))
                for sortKey in ["c", "zz", "É", "a"] {
                    changes[sortKey] = item(sortKey)
                    try writer.putItem(changes[sortKey]!)
                }
                changes["m"] = item("m")
                try writer.importBatch([changes["m"]!])  // forces the checkpoint
                try checkFile(store, holds: changes, store == directory ? "rewritten from kept bytes" : "rewritten from a parsed file")
            }
        }
    }

    private func copyTree(_ source: String, _ destination: String) throws {
        for name in try FileSystem.listDirectory(source) {
            var status = stat()
            guard stat(source + "/" + name, &status) == 0 else { continue }
            if status.st_mode & S_IFMT == S_IFDIR {
                try FileSystem.createDirectory(destination + "/" + name)
                try copyTree(source + "/" + name, destination + "/" + name)
            } else {
                try FileSystem.writeAtomically(destination + "/" + name, try FileSystem.readFile(source + "/" + name))
            }
        }
    }
}
