@testable import LambdaAuthTables
import LambdaAuthVerifier
import LambdaAuthTestSupport
import Testing

/// The change log keeps what its opener's `ChangeLogFilter` says and erases what it names as an
/// account, with spellings that are not the product's: the store knows none of its own.
@Suite struct ChangeLogFilterTests {
    /// Items under `DOC#` are kept, cut to their title; `OWNER` is a partition's account item and
    /// `ACCT#<id>` carries its id.
    static let filter = ChangeLogFilter(
        keptAttributes: { key in key.sk.hasPrefix("DOC#") || key.sk == "OWNER" ? ["PK", "SK", "title"] : nil },
        accountSortKey: "OWNER",
        accountID: { partitionKey in partitionKey.hasPrefix("ACCT#") ? String(partitionKey.dropFirst(5)) : nil })

    static func store(_ directory: String, _ filter: ChangeLogFilter = filter) -> LocalTable {
        LocalTable(directory: directory, clock: SystemClock(),
                   schema: LocalStoreSchema(indexName: "BY_TITLE", segmentPrefixes: [], changeLog: filter), checkpointThreshold: 256)
    }

    static func put(_ table: LocalTable, _ pk: String, _ sk: String, _ attributes: Item) throws {
        try table.putItem(TableKey(pk: pk, sk: sk).item.merging(attributes) { $1 })
    }

    @Test func keepsOnlyTheKeptItemsCutToTheKeptAttributesAcrossACheckpoint() throws {
        let directory = TestSupport.temporaryDirectory("change-log-filter")
        defer { TestSupport.removeTree(directory) }
        let table = Self.store(directory)
        try Self.put(table, "ACCT#a1", "DOC#1", ["title": .s("first"), "secret": .s("SECRETVALUE")])
        try Self.put(table, "ACCT#a1", "NOTE#1", ["title": .s("not kept")])
        // Only an attribute the filter leaves out changed: no record, as no reader would see one.
        try Self.put(table, "ACCT#a1", "DOC#1", ["title": .s("first"), "secret": .s("OTHERSECRET")])
        try Self.put(table, "ACCT#a1", "DOC#1", ["title": .s("second")])
        func check(_ when: String) throws {
            let changes = try table.changeRecords()
            #expect(changes.map(\.key.sk) == ["DOC#1", "DOC#1"], "\(when)")
            #expect(changes.map(\.kind) == [.insert, .modify], "\(when)")
            #expect(changes.last?.oldImage?["title"] == .s("first"), "\(when)")
            #expect(changes.allSatisfy { Set(($0.oldImage ?? [:]).keys).union(($0.newImage ?? [:]).keys).isSubset(of: ["PK", "SK", "title"]) },
                    "\(when)")
        }
        try check("read from the log")
        try table.eraseDeletedItems()
        try check("read from the file")
        let file = String(decoding: try FileSystem.readFile(directory + "/changes"), as: UTF8.self)
        #expect(!file.contains("SECRET"))
    }

    @Test func anErasureTakesTheAccountsRecordsAndTheRecordsNamingItAndNoOthers() throws {
        let directory = TestSupport.temporaryDirectory("change-log-filter-erasure")
        defer { TestSupport.removeTree(directory) }
        let table = Self.store(directory)
        try Self.put(table, "ACCT#a1", "OWNER", ["title": .s("one")])
        try Self.put(table, "ACCT#a1", "DOC#1", ["title": .s("one's doc")])
        try Self.put(table, "ACCT#b2", "OWNER", ["title": .s("two")])
        try Self.put(table, "ACCT#b2", "DOC#1", ["title": .s("shared by a1")])
        // Another account's item removed while its account item stays: its records stay.
        try table.deleteItem(TableKey(pk: "ACCT#b2", sk: "DOC#1"))
        try table.eraseDeletedItems()
        #expect(try table.changeRecords().count == 5)
        try table.deleteItem(TableKey(pk: "ACCT#a1", sk: "DOC#1"))
        try table.deleteItem(TableKey(pk: "ACCT#a1", sk: "OWNER"))
        try table.eraseDeletedItems()
        let changes = try table.changeRecords()
        #expect(changes.map { $0.key.pk + " " + $0.key.sk } == ["ACCT#b2 OWNER"])
    }

    /// The erasure reads the file as bytes (account deletion runs it on every request): what it
    /// keeps stays byte for byte, a line a crash cut short goes when it names the account, and a
    /// deletion whose removals an ordinary checkpoint moved to the file before its erasure is
    /// still found.
    @Test func anErasureKeepsOtherLinesByteForByteAndFindsADeletionLeftUnerased() throws {
        let directory = TestSupport.temporaryDirectory("change-log-filter-bytes")
        defer { TestSupport.removeTree(directory) }
        let table = Self.store(directory)
        try Self.put(table, "ACCT#a1", "OWNER", ["title": .s("one")])
        try Self.put(table, "ACCT#a1", "DOC#1", ["title": .s("one's doc")])
        try Self.put(table, "ACCT#b2", "OWNER", ["title": .s("two")])
        try table.eraseDeletedItems()
        let path = directory + "/changes"
        let lines = String(decoding: try FileSystem.readFile(path), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        let keptLine = try #require(lines.first { $0.contains("ACCT#b2") })
        // A crash cut an append short: half of a1's line, then the next append's own line.
        let cut = String(try #require(lines.first { $0.contains("ACCT#a1") }).prefix(120))
        try FileSystem.writeAtomically(path, Array((lines.joined(separator: "\n") + "\n" + cut + "\n").utf8))

        try table.deleteItem(TableKey(pk: "ACCT#a1", sk: "DOC#1"))
        try table.deleteItem(TableKey(pk: "ACCT#a1", sk: "OWNER"))
        #expect(try table.checkpointIfDue(), "the removals reach the file before any erasure")
        #expect(String(decoding: try FileSystem.readFile(path), as: UTF8.self).contains(#""eventName":"REMOVE""#))
        try table.eraseDeletedItems()

        let file = String(decoding: try FileSystem.readFile(path), as: UTF8.self)
        #expect(file == keptLine + "\n")
        #expect(try table.changeRecords().map { $0.key.pk + " " + $0.key.sk } == ["ACCT#b2 OWNER"])
    }

    @Test func linesAreFoundWithoutTheirNewlinesAndEmptyOnesLeftOut() {
        func lines(_ text: String) -> [String] {
            let bytes = Array(text.utf8)
            return ChangeLog.lineRanges(bytes).map { String(decoding: bytes[$0], as: UTF8.self) }
        }
        #expect(lines("") == [])
        #expect(lines("\n\n") == [])
        #expect(lines("a\nbc\n\nd") == ["a", "bc", "d"])
        #expect(lines("a\n") == ["a"])
        #expect(ChangeLog.contains(Array("xxabcxx".utf8)[...], Array("abc".utf8)))
        #expect(!ChangeLog.contains(Array("ab".utf8)[...], Array("abc".utf8)))
    }

    @Test func theDefaultFilterKeepsNothingAndAnErasureWithoutAccountsKeepsEverything() throws {
        let directory = TestSupport.temporaryDirectory("change-log-filter-none")
        let other = TestSupport.temporaryDirectory("change-log-filter-all")
        defer {
            TestSupport.removeTree(directory)
            TestSupport.removeTree(other)
        }
        let silent = Self.store(directory, .none)
        try Self.put(silent, "ACCT#a1", "DOC#1", ["title": .s("first")])
        #expect(try silent.changeRecords().isEmpty)

        let everything = ChangeLogFilter(keptAttributes: { _ in ["PK", "SK", "title"] }, accountSortKey: nil, accountID: { _ in nil })
        let table = Self.store(other, everything)
        try Self.put(table, "ACCT#a1", "OWNER", ["title": .s("one")])
        try table.deleteItem(TableKey(pk: "ACCT#a1", sk: "OWNER"))
        try table.eraseDeletedItems()
        #expect(try table.changeRecords().map(\.kind) == [.insert, .remove])
    }
}
