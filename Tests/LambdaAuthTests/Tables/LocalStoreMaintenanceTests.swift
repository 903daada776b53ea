@testable import LambdaAuth
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The checkpoint off the request path: writes only append until the cap, maintenance does the
/// rewriting.
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

    private func walSize(_ directory: String) -> Int {
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
            #expect(largest > 2 * Self.threshold, "writes checkpointed before the cap")
            #expect(inlineCheckpoints >= 5)
            let reopened = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            var count = 0
            try reopened.forEachItem { _ in count += 1 }
            #expect(count == 300)
        }
    }
}
