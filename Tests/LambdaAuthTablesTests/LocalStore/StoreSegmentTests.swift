@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTestSupport
import Testing

/// A partition's sessions and refresh tokens in segment files of their own (StoreLayout), so that a
/// sign-in's read of the profile and identities never parses them: every read sees each item once
/// whichever files hold it, a partition written before segments is read as it is and moved at its
/// next checkpoint, and a query that cannot match a family never opens that family's file.
@Suite struct StoreSegmentTests {
    static let now: Int64 = 1_800_000_000
    static let partitionKey = "USER#segments"

    private func withStore(_ body: (String, LocalTable) throws -> Void) throws {
        let root = TestSupport.temporaryDirectory("store-segments")
        defer { TestSupport.removeTree(root) }
        try body(root + "/store", LocalTable(directory: root + "/store", clock: FixedClock(Double(Self.now)),
                                             checkpointThreshold: LocalTable.checkpointThreshold, dueStores: DueStores()))
    }

    static func item(_ sortKey: String) -> Item {
        var item = TableKey(pk: partitionKey, sk: sortKey).item
        item["note"] = .s("of \(sortKey)")
        return item
    }

    static let sortKeys = ["IDENTITY#google", "PROFILE", "REFRESH#f1.1", "REFRESH#f1.2", "REFRESH#f2.1", "SESSION#f1", "SESSION#f2",
                           "TOKEN#apple", "WEBAUTHN#HANDLE"]

    private func sortKeys(_ table: LocalTable, _ condition: String = "PK = :p", _ values: [String: AttributeValue] = [:]) throws -> [String] {
        var all = values
        all[":p"] = .s(Self.partitionKey)
        return try table.queryAll(QueryRequest(keyCondition: condition, attributes: .init(values: all))).compactMap { $0["SK"]?.stringValue }
    }

    /// What every read must show, whichever files hold the items.
    private func expectEveryItemOnce(_ table: LocalTable, _ step: String) throws {
        #expect(try sortKeys(table) == Self.sortKeys, "\(step): the whole partition, in order")
        #expect(try sortKeys(table, "PK = :p AND SK < :q", [":q": .s("Q")]) == ["IDENTITY#google", "PROFILE"], "\(step)")
        #expect(try sortKeys(table, "PK = :p AND begins_with(SK, :r)", [":r": .s("REFRESH#")]) == ["REFRESH#f1.1", "REFRESH#f1.2", "REFRESH#f2.1"],
                "\(step)")
        #expect(try sortKeys(table, "PK = :p AND SK BETWEEN :a AND :b", [":a": .s("REFRESH#f2"), ":b": .s("SESSION#f1")])
                == ["REFRESH#f2.1", "SESSION#f1"], "\(step)")
        for sortKey in Self.sortKeys {
            #expect(try table.getItem(TableKey(pk: Self.partitionKey, sk: sortKey)) == Self.item(sortKey), "\(step): \(sortKey)")
        }
        var scanned: [String] = []
        try table.forEachItem { scanned.append($0["SK"]!.stringValue!) }
        #expect(scanned.sorted() == Self.sortKeys, "\(step): a scan sees each item once")
    }

    @Test func sessionsAndTokensLiveInSegmentFilesOfTheirOwn() throws {
        try withStore { directory, table in
            try table.importBatch(Self.sortKeys.map(Self.item))
            let layout = StoreLayout(root: directory)
            func stored(_ path: String) throws -> [String] {
                try DynamoJSON.partitionItems(FileSystem.readFile(path)).compactMap { $0["SK"]?.stringValue }
            }
            #expect(try stored(layout.partitionPath(Self.partitionKey)) == ["IDENTITY#google", "PROFILE", "TOKEN#apple", "WEBAUTHN#HANDLE"])
            #expect(layout.segmentPath(Self.partitionKey, "SESSION#").hasSuffix("/USER#segments~SESSION.json"))
            #expect(try stored(layout.segmentPath(Self.partitionKey, "SESSION#")) == ["SESSION#f1", "SESSION#f2"])
            #expect(try stored(layout.segmentPath(Self.partitionKey, "REFRESH#")) == ["REFRESH#f1.1", "REFRESH#f1.2", "REFRESH#f2.1"])
            try expectEveryItemOnce(table, "segmented")

            // A family emptied by deletions loses its file at the next checkpoint.
            for sortKey in ["SESSION#f1", "SESSION#f2"] { try table.deleteItem(TableKey(pk: Self.partitionKey, sk: sortKey)) }
            try table.eraseDeletedItems()
            #expect(!FileSystem.exists(layout.segmentPath(Self.partitionKey, "SESSION#")))
            #expect(try sortKeys(table, "PK = :p AND begins_with(SK, :s)", [":s": .s("SESSION#")]).isEmpty)
        }
    }

    /// The proof that a sign-in's read skips them: with the session file damaged, the profile and
    /// identities still read, while a read of the sessions reports the damaged file.
    @Test func aQueryThatCannotMatchAFamilyNeverOpensItsFile() throws {
        try withStore { directory, table in
            try table.importBatch(Self.sortKeys.map(Self.item))
            let damaged = StoreLayout(root: directory).segmentPath(Self.partitionKey, "SESSION#")
            try FileSystem.writeAtomically(damaged, Array(#"{"Items": [{"PK"#.utf8))
            let reader = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            #expect(try sortKeys(reader, "PK = :p AND SK < :q", [":q": .s("Q")]) == ["IDENTITY#google", "PROFILE"])
            #expect(try sortKeys(reader, "PK = :p AND begins_with(SK, :r)", [":r": .s("REFRESH#")]).count == 3)
            #expect(try reader.getItem(TableKey(pk: Self.partitionKey, sk: "PROFILE")) != nil)
            do {
                _ = try reader.query(QueryRequest(keyCondition: "PK = :p AND begins_with(SK, :s)",
                                                  attributes: .init(values: [":p": .s(Self.partitionKey), ":s": .s("SESSION#")])))
                Issue.record("the damaged session file must be reported")
            } catch let error as TableError {
                guard case .corrupted(let message) = error else { throw error }
                #expect(message.contains(damaged))
            }
        }
    }

    /// A file's items are parsed when used: a damaged item (its structure whole, an attribute of
    /// no DynamoDB type) is reported by the read that needs it, with the file's path, and the
    /// file's other items read as ever; a damaged key is reported for the whole file; a
    /// checkpoint carries the untouched items' text over as it is.
    @Test func anItemOfAFileIsParsedWhenItIsUsed() throws {
        try withStore { directory, table in
            try table.importBatch(Self.sortKeys.map(Self.item))
            let path = StoreLayout(root: directory).segmentPath(Self.partitionKey, "REFRESH#")
            let text = String(decoding: try FileSystem.readFile(path), as: UTF8.self)
            let damagedText = text.replacing(#"{"S":"of REFRESH#f2.1"}"#, with: #"{"Q":"of REFRESH#f2.1"}"#)
            #expect(damagedText != text)
            try FileSystem.writeAtomically(path, Array(damagedText.utf8))
            let reader = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)), checkpointThreshold: 1, dueStores: DueStores())
            #expect(try reader.getItem(TableKey(pk: Self.partitionKey, sk: "REFRESH#f1.2")) == Self.item("REFRESH#f1.2"))
            #expect(try sortKeys(reader, "PK = :p AND begins_with(SK, :r)", [":r": .s("REFRESH#f1.")]) == ["REFRESH#f1.1", "REFRESH#f1.2"])
            #expect {
                _ = try reader.getItem(TableKey(pk: Self.partitionKey, sk: "REFRESH#f2.1"))
            } throws: { error in
                guard case TableError.corrupted(let message)? = error as? TableError else { return false }
                return message.contains(path) && message.contains("unsupported attribute type Q")
            }
            try reader.putItem(Self.item("REFRESH#f3.1"))
            #expect(try reader.checkpointIfDue())
            #expect(String(decoding: try FileSystem.readFile(path), as: UTF8.self).contains(#"{"Q":"of REFRESH#f2.1"}"#))

            let keyless = damagedText.replacing(#""SK":{"S":"REFRESH#f1.1"}"#, with: #""SK":{"N":"1"}"#)
            #expect(keyless != damagedText)
            try FileSystem.writeAtomically(path, Array(keyless.utf8))
            #expect {
                _ = try LocalTable(directory: directory, clock: FixedClock(Double(Self.now))).getItem(TableKey(pk: Self.partitionKey, sk: "REFRESH#f1.2"))
            } throws: { error in
                guard case TableError.corrupted(let message)? = error as? TableError else { return false }
                return message.contains("without PK/SK")
            }
        }
    }

    /// A store written before segments: each partition's one file holds every item. Read as it
    /// is; its next checkpoint moves the families out; and the instant between the two renames
    /// (the segment file in place, the partition file not yet rewritten) shows each item once.
    @Test func aPartitionWrittenBeforeSegmentsIsReadThenMoved() throws {
        try withStore { directory, table in
            let layout = StoreLayout(root: directory)
            let whole = KeyedPartition(Self.sortKeys.map(Self.item)).fileBytes
            try FileSystem.createDirectory(FileSystem.parentDirectory(of: layout.partitionPath(Self.partitionKey)))
            try FileSystem.writeAtomically(layout.partitionPath(Self.partitionKey), whole)
            try expectEveryItemOnce(table, "before segments")

            // Between the renames: the session segment written, the partition file still whole.
            let sessions = KeyedPartition(["SESSION#f1", "SESSION#f2"].map(Self.item)).fileBytes
            try FileSystem.writeAtomically(layout.segmentPath(Self.partitionKey, "SESSION#"), sessions)
            try expectEveryItemOnce(table, "between the renames")

            try table.putItem(Self.item("PROFILE"))
            try table.eraseDeletedItems()
            #expect(try DynamoJSON.partitionItems(FileSystem.readFile(layout.partitionPath(Self.partitionKey))).count == 4)
            #expect(FileSystem.exists(layout.segmentPath(Self.partitionKey, "REFRESH#")))
            try expectEveryItemOnce(table, "moved")
            try expectEveryItemOnce(LocalTable(directory: directory, clock: FixedClock(Double(Self.now))), "moved, another process")
        }
    }

    /// Every kind of sort-key condition on `values` (each operator, begins_with, every BETWEEN pair).
    static func everyCondition(of values: [String]) -> [SortKeyCondition] {
        var conditions: [SortKeyCondition] = []
        for value in values {
            for op in [ComparisonOperator.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual] { conditions.append(.comparison(op, value)) }
            conditions.append(.beginsWith(value))
            for high in values { conditions.append(.between(value, high)) }
        }
        return conditions
    }

    /// A sorted partition's candidates for a condition hold every key it matches (checked for
    /// every kind of condition), and for a family's prefix only that family's keys; an unsorted
    /// partition's are all its keys.
    @Test func aSortedPartitionsCandidatesHoldEveryMatchingKey() {
        let keys = ["PROFILE", "REFRESH#", "REFRESH#a", "REFRESH#f1.1", "REFRESH#f1.2", "REFRESH#f10.1", "REFRESH#f2.1",
                    "REFRESH#\u{7F}", "REFRESH#é", "SESSION#", "SESSION#f1", "SESSION#z", "ZZ"]
        let partition = KeyedPartition(keys.map(Self.item))
        let values = ["", "A", "Q", "R", "REFRESH", "REFRESH#", "REFRESH#a", "REFRESH#f1", "REFRESH#f1.", "REFRESH#f1.2", "REFRESH$",
                      "S", "SESSION#", "SESSION#zz", "ZZ", "é"]
        for condition in Self.everyCondition(of: values) {
            let candidates = partition.candidates(condition)
            for (index, key) in keys.enumerated() where condition.matches(key) {
                #expect(candidates.contains(index), "\(condition) matches \(key)")
            }
        }
        #expect(partition.candidates(.beginsWith("REFRESH#f1.")).map { keys[$0] } == ["REFRESH#f1.1", "REFRESH#f1.2"])
        #expect(partition.candidates(.comparison(.equal, "SESSION#z")).map { keys[$0] } == ["SESSION#z"])
        let unsorted = KeyedPartition(["SESSION#z", "PROFILE", "REFRESH#f1.1"].map(Self.item))
        #expect(unsorted.candidates(.beginsWith("REFRESH#f1.")) == 0..<3)
    }

    /// `mayMatch` is false only when no key of the family matches: checked against sample keys
    /// of each family for every kind of condition, and false where a sign-in needs it to be.
    @Test func aConditionRulesOutAFamilyOnlyWhenNoneOfItsKeysCanMatch() {
        let samples = ["REFRESH#", "REFRESH#a", "REFRESH#f1.2", "REFRESH#\u{7F}", "REFRESH#é", "SESSION#", "SESSION#z"]
        let values = ["", "A", "Q", "R", "REFRESH", "REFRESH#", "REFRESH#a", "REFRESH#f", "REFRESH$", "S", "SESSION#", "SESSION#zz", "T", "é"]
        for condition in Self.everyCondition(of: values) {
            for prefix in LocalStoreSchema.lambdaAuth.segmentPrefixes where samples.contains(where: { $0.hasPrefix(prefix) && condition.matches($0) }) {
                #expect(condition.mayMatch(prefix: prefix), "\(condition) matches a key of \(prefix)")
            }
        }
        #expect(!SortKeyCondition.comparison(.less, "Q").mayMatch(prefix: "REFRESH#"))
        #expect(!SortKeyCondition.comparison(.less, "Q").mayMatch(prefix: "SESSION#"))
        #expect(!SortKeyCondition.beginsWith("REFRESH#").mayMatch(prefix: "SESSION#"))
        #expect(!SortKeyCondition.comparison(.equal, "PROFILE").mayMatch(prefix: "SESSION#"))
        #expect(!SortKeyCondition.comparison(.greater, "REFRESH$").mayMatch(prefix: "REFRESH#"))
        #expect(SortKeyCondition.comparison(.greater, "REFRESH#zzz").mayMatch(prefix: "REFRESH#"))
    }
}
