import Crypto
@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct LocalTableTests {
    static let now: Int64 = 1_800_000_000

    /// The table keeps its own record of due stores: another test's maintenance (the runtime
    /// loop's, in process) must not rewrite files a test compares byte for byte.
    private func withStore(_ body: (String, LocalTable) throws -> Void) throws {
        let directory = TestSupport.temporaryDirectory("local-table") + "/store"
        defer { TestSupport.removeTree(FileSystem.parentDirectory(of: directory)) }
        try body(directory, LocalTable(directory: directory, clock: FixedClock(Double(Self.now)),
                                       checkpointThreshold: LocalTable.checkpointThreshold, dueStores: DueStores()))
    }

    @Test func passesTheConformanceSuite() throws {
        let root = TestSupport.temporaryDirectory("local-conformance")
        defer { TestSupport.removeTree(root) }
        var count = 0
        let suite = TableConformance(makeTable: {
            count += 1
            return LocalTable(directory: "\(root)/store-\(count)", clock: FixedClock(Double(Self.now)))
        }, hidesExpiredItemsImmediately: true, now: Self.now, runID: "run1")
        try suite.runAll()
    }

    @Test func passesTheConformanceSuiteAcrossCheckpoints() throws {
        // One store for every check, with enough traffic that several checkpoints happen midway.
        let root = TestSupport.temporaryDirectory("local-conformance-shared")
        defer { TestSupport.removeTree(root) }
        let table = LocalTable(directory: root + "/store", clock: FixedClock(Double(Self.now)), checkpointThreshold: 4096)
        for round in 0..<2 {
            try TableConformance(makeTable: { table }, hidesExpiredItemsImmediately: true, now: Self.now,
                                 runID: "round\(round)").runAll()
        }
        #expect(FileSystem.exists(root + "/store/items"), "checkpoints wrote item files")
    }

    /// 400 KB of encoded item, whether the quick bound clears it (small items) or the item must
    /// be encoded to tell (a string that would be over the limit were every byte escaped).
    @Test func refusesItemsOverTheSizeLimit() throws {
        try withStore { _, table in
            func item(_ sortKey: String, _ text: String) -> Item {
                var item = TableKey(pk: "USER#1", sk: sortKey).item
                item["data"] = .s(text)
                return item
            }
            try table.putItem(item("small", "x"))
            try table.putItem(item("near", String(repeating: "x", count: 399 * 1024)))
            #expect(try table.getItem(TableKey(pk: "USER#1", sk: "near"))?["data"]?.stringValue?.utf8.count == 399 * 1024)
            for text in [String(repeating: "x", count: 401 * 1024), String(repeating: "\"", count: 201 * 1024)] {
                #expect(throws: TableError.self) { try table.putItem(item("over", text)) }
            }
            #expect(try table.getItem(TableKey(pk: "USER#1", sk: "over")) == nil)
        }
    }

    @Test func itemsSurviveReopeningAndCheckpoints() throws {
        try withStore { directory, table in
            for index in 0..<400 {
                var item = TableKey(pk: "USER#\(index % 50)", sk: "SESSION#\(index)").item
                item["payload"] = .s(String(repeating: "x", count: 100))
                if index % 3 == 0 {
                    item["GSI1PK"] = .s("REFRESH#\(index)")
                    item["GSI1SK"] = .s("REFRESH")
                }
                try table.putItem(item)
                // Maintenance between writes, as a handler runs it after each response.
                if index % 25 == 24 { try table.checkpointIfDue() }
            }
            let walSize = try FileSystem.readFile(directory + "/wal").count
            // A record is about 300 bytes of item and 45 of change stamp (`at`, `seq`: the change log's).
            #expect(walSize < LocalTable.checkpointThreshold + 25 * 350, "the log is checkpointed, not grown forever")
            #expect(FileSystem.exists(directory + "/items"), "maintenance checkpointed")
            let reopened = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            #expect(try reopened.getItem(TableKey(pk: "USER#7", sk: "SESSION#7")) != nil)
            let page = try reopened.query(QueryRequest(keyCondition: "PK = :p", attributes: .init(values: [":p": .s("USER#7")])))
            #expect(page.items.count == 8)
            let index = try reopened.query(QueryRequest(indexName: "GSI1", keyCondition: "GSI1PK = :h",
                                                        attributes: .init(values: [":h": .s("REFRESH#99")])))
            #expect(index.items.first?["SK"] == .s("SESSION#99"))
            var scanned = 0
            var start: Item?
            repeat {
                let scanPage = try reopened.scan(limit: 64, exclusiveStartKey: start)
                scanned += scanPage.items.count
                start = scanPage.lastEvaluatedKey
            } while start != nil
            #expect(scanned == 400)
            var exported = 0
            try reopened.forEachItem { _ in exported += 1 }
            #expect(exported == 400)
        }
    }

    @Test func filesHoldDynamoJSON() throws {
        try withStore { directory, table in
            var item = TableKey(pk: "USER#a/b", sk: "PROFILE").item
            item["email"] = .s("a@example.com")
            try table.importBatch([item])
            let path = StoreLayout(root: directory).partitionPath("USER#a/b")
            #expect(path.hasSuffix("/USER#a%2Fb.json"))
            let stored = try JSONValue.parse(FileSystem.readFile(path))
            #expect(stored["Items"]?.arrayValue?.first?["email"] == ["S": "a@example.com"])
        }
    }

    @Test func readsAndFailedWritesChangeNoFile() throws {
        try withStore { directory, table in
            let missing = LocalTable(directory: directory + "/never", clock: SystemClock())
            #expect(try missing.getItem(TableKey(pk: "USER#x", sk: "PROFILE")) == nil)
            #expect(try missing.scan(limit: nil, exclusiveStartKey: nil).items.isEmpty)
            #expect(!FileSystem.exists(directory + "/never"), "a read creates nothing")

            for index in 0..<300 {
                var item = TableKey(pk: "USER#\(index)", sk: "PROFILE").item
                item["GSI1PK"] = .s("EMAIL#\(index % 7)")
                item["GSI1SK"] = .s("U#\(index)")
                try table.putItem(item)
            }
            try table.checkpointIfDue()  // so that partition and index files exist to compare
            let before = try Self.snapshot(directory)
            #expect(before.count > 300)
            let other = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            for reader in [table, other] {
                _ = try reader.getItem(TableKey(pk: "USER#1", sk: "PROFILE"))
                _ = try reader.query(QueryRequest(keyCondition: "PK = :p", attributes: .init(values: [":p": .s("USER#2")])))
                _ = try reader.query(QueryRequest(indexName: "GSI1", keyCondition: "GSI1PK = :e",
                                                  attributes: .init(values: [":e": .s("EMAIL#3")])))
                _ = try reader.scan(limit: 10, exclusiveStartKey: nil)
                #expect(throws: TableError.self) {
                    try reader.putItem(TableKey(pk: "USER#1", sk: "PROFILE").item, condition: "attribute_not_exists(PK)",
                                       attributes: .init())
                }
                #expect(throws: TableError.self) {
                    try reader.updateItem(TableKey(pk: "USER#1", sk: "PROFILE"), update: "SET a = :v", condition: "attribute_not_exists(PK)",
                                          attributes: .init(values: [":v": .s("x")]), returnValues: .none)
                }
                #expect(throws: TableError.self) {
                    try reader.deleteItem(TableKey(pk: "USER#1", sk: "PROFILE"), condition: "attribute_not_exists(PK)", attributes: .init())
                }
                #expect(throws: TableError.self) {
                    try reader.transactWrite([.put(TableKey(pk: "USER#new", sk: "PROFILE").item),
                                              .conditionCheck(key: TableKey(pk: "USER#1", sk: "PROFILE"), condition: "attribute_not_exists(PK)")])
                }
                try reader.deleteItem(TableKey(pk: "USER#absent", sk: "PROFILE"))
            }
            #expect(try Self.snapshot(directory) == before, "every file byte-identical, nothing added or removed")
        }
    }

    @Test func aDamagedItemFileIsReportedWithItsPath() throws {
        try withStore { directory, table in
            try table.importBatch([TableKey(pk: "USER#1", sk: "PROFILE").item, TableKey(pk: "USER#1", sk: "SESSION#1").item])
            #expect(try table.getItem(TableKey(pk: "USER#1", sk: "SESSION#1")) != nil)
            let path = StoreLayout(root: directory).partitionPath("USER#1")
            try FileSystem.writeAtomically(path, Array(#"{"PK": {"S": "USER#1"}, "SK": "#.utf8))
            for read in [{ _ = try table.getItem(TableKey(pk: "USER#1", sk: "PROFILE")) },
                         { _ = try table.query(QueryRequest(keyCondition: "PK = :p", attributes: .init(values: [":p": .s("USER#1")]))) },
                         { _ = try table.scan(limit: nil, exclusiveStartKey: nil) }] as [() throws -> Void] {
                do {
                    try read()
                    Issue.record("a damaged file must not be read silently")
                } catch let error as TableError {
                    guard case .corrupted(let message) = error else {
                        Issue.record("expected corrupted, got \(error)")
                        continue
                    }
                    #expect(message.contains(path))
                    #expect(error.authError.code == .storeUnavailable)
                }
            }
            // A file holding another partition's items is damage too.
            try FileSystem.writeAtomically(path, JSONValue.object(["Items": [DynamoJSON.encode(TableKey(pk: "USER#2", sk: "PROFILE").item)]])
                .serializedBytes())
            #expect(throws: TableError.self) { try table.getItem(TableKey(pk: "USER#1", sk: "PROFILE")) }
            try table.importBatch([TableKey(pk: "USER#3", sk: "PROFILE").item])
            #expect(try table.getItem(TableKey(pk: "USER#3", sk: "PROFILE")) != nil, "other partitions stay readable")
        }
    }

    @Test func aDamagedLogRecordIsCorruptionButATornTailIsNot() throws {
        try withStore { directory, table in
            for index in 0..<3 { try table.putItem(TableKey(pk: "USER#\(index)", sk: "PROFILE").item) }
            let walPath = directory + "/wal"
            let intact = try FileSystem.readFile(walPath)

            // A crash mid-write: half a record at the end, then zeros the file system left.
            let record = WriteAheadLog.encodeRecord([(TableKey(pk: "USER#9", sk: "PROFILE"), TableKey(pk: "USER#9", sk: "PROFILE").item)],
                                                    generation: 1)
            #expect(intact.suffix(WriteAheadLog.recordHeaderSize).allSatisfy { $0 == 0 }, "the last record has an end mark after it")
            try FileSystem.writeAtomically(walPath, intact.dropLast(WriteAheadLog.recordHeaderSize) + record.prefix(record.count / 2))
            let fresh = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            #expect(try fresh.getItem(TableKey(pk: "USER#2", sk: "PROFILE")) != nil)
            #expect(try fresh.getItem(TableKey(pk: "USER#9", sk: "PROFILE")) == nil, "an unacknowledged record is not applied")
            try FileSystem.writeAtomically(walPath, intact + [UInt8](repeating: 0x5A, count: 300))
            #expect(try fresh.getItem(TableKey(pk: "USER#1", sk: "PROFILE")) != nil)
            try fresh.putItem(TableKey(pk: "USER#5", sk: "PROFILE").item)
            #expect(try FileSystem.readFile(walPath).count == intact.count + 300, "the writer wrote over the torn tail")
            #expect(try LocalTable(directory: directory, clock: SystemClock()).getItem(TableKey(pk: "USER#5", sk: "PROFILE")) != nil)

            // A flipped bit inside the first record (its payload, its generation) with valid
            // records after it, or in the header's generation: damage, reported.
            let intactAgain = try FileSystem.readFile(walPath)
            for (position, step) in [(WriteAheadLog.headerSize + WriteAheadLog.recordHeaderSize + 5, "payload"),
                                     (WriteAheadLog.headerSize + 4, "record generation"), (8, "header generation")] {
                var damaged = intactAgain
                damaged[position] ^= 0x01
                try FileSystem.writeAtomically(walPath, damaged)
                do {
                    _ = try LocalTable(directory: directory, clock: SystemClock()).getItem(TableKey(pk: "USER#0", sk: "PROFILE"))
                    Issue.record("a damaged \(step) must be reported")
                } catch let error as TableError {
                    guard case .corrupted(let message) = error else {
                        Issue.record("\(step): expected corrupted, got \(error)")
                        continue
                    }
                    #expect(message.contains(walPath), "\(step)")
                }
            }
        }
    }

    /// A checkpoint starts the log's next generation by its header alone: the records of the
    /// one before stay in the file, and neither a process that parsed them nor a new one reads
    /// them again; the next commits write over them. An erasure cuts the file back instead.
    @Test func anEarlierGenerationsRecordsAreNeverReadAgain() throws {
        try withStore { directory, _ in
            let table = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)), checkpointThreshold: 200, dueStores: DueStores())
            for index in 0..<4 { try table.putItem(TableKey(pk: "USER#\(index)", sk: "PROFILE").item) }
            let before = try FileSystem.readFile(directory + "/wal")
            #expect(try table.checkpointIfDue())
            let after = try FileSystem.readFile(directory + "/wal")
            let kept = WriteAheadLog.headerSize + WriteAheadLog.recordHeaderSize
            #expect(after.count == before.count && after.dropFirst(kept) == before.dropFirst(kept),
                    "the records stay; only the header and an end mark after it changed")
            #expect(after.prefix(WriteAheadLog.headerSize) != before.prefix(WriteAheadLog.headerSize))
            #expect(after[WriteAheadLog.headerSize..<kept].allSatisfy { $0 == 0 })
            try table.deleteItem(TableKey(pk: "USER#1", sk: "PROFILE"), condition: nil, attributes: .init())
            for reader in [table, LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))] {
                var keys: [String] = []
                try reader.forEachItem { keys.append($0["PK"]!.stringValue!) }
                #expect(keys.sorted() == ["USER#0", "USER#2", "USER#3"], "an earlier generation's put of USER#1 came back")
            }
            #expect(try FileSystem.readFile(directory + "/wal").count == before.count, "the deletion was written over the old records")
            try table.eraseDeletedItems()
            #expect(try FileSystem.readFile(directory + "/wal").count == WriteAheadLog.headerSize, "an erasure leaves no earlier record")

            // An erasure when a checkpoint has just run (nothing left to move) still cuts the file.
            for index in 0..<4 { try table.putItem(TableKey(pk: "USER#\(index + 10)", sk: "PROFILE").item) }
            #expect(try table.checkpointIfDue())
            #expect(try FileSystem.readFile(directory + "/wal").count > WriteAheadLog.headerSize + WriteAheadLog.recordHeaderSize)
            try table.eraseDeletedItems()
            #expect(try FileSystem.readFile(directory + "/wal").count == WriteAheadLog.headerSize, "an erasure after a checkpoint")
        }
    }

    /// A log of the first format (records without a generation, from an earlier release) is read
    /// as it is; the next write moves its records to the partition files and starts a log of the
    /// current format.
    @Test func aLogOfTheFirstFormatIsReadThenReplaced() throws {
        try withStore { directory, _ in
            try FileSystem.createDirectory(directory)
            try FileSystem.writeAtomically(directory + "/LOCK", [])
            var log = WriteAheadLog.firstFormatMagic + WriteAheadLog.littleEndian(7)
            for index in 0..<3 {
                let key = TableKey(pk: "USER#\(index)", sk: "PROFILE")
                let payload = JSONValue.object(["changes": [["key": DynamoJSON.encode(key.item), "item": DynamoJSON.encode(key.item)]]]).serializedBytes()
                log += withUnsafeBytes(of: UInt32(payload.count).littleEndian) { Array($0) } + WriteAheadLog.checksum(payload, generation: nil) + payload
            }
            try FileSystem.writeAtomically(directory + "/wal", log)
            let table = LocalTable(directory: directory, clock: FixedClock(Double(Self.now)))
            #expect(try table.getItem(TableKey(pk: "USER#2", sk: "PROFILE")) != nil)
            try table.putItem(TableKey(pk: "USER#3", sk: "PROFILE").item)
            let wal = try FileSystem.readFile(directory + "/wal")
            #expect(Array(wal.prefix(8)) == WriteAheadLog.magic)
            #expect(WriteAheadLog.integer(wal[8..<16]) == 8, "the next generation")
            #expect(FileSystem.exists(StoreLayout(root: directory).partitionPath("USER#0")), "the first format's records were checkpointed")
            var keys: [String] = []
            try LocalTable(directory: directory, clock: FixedClock(Double(Self.now))).forEachItem { keys.append($0["PK"]!.stringValue!) }
            #expect(keys.sorted() == ["USER#0", "USER#1", "USER#2", "USER#3"])
        }
    }

    private func encodedSize(_ key: TableKey) -> Int {
        WriteAheadLog.encodeRecord([(key, key.item)], generation: 1).count
    }

    @Test func aHeldLockMakesTheStoreUnavailableAfterTwoSeconds() throws {
        try withStore { directory, table in
            try table.putItem(TableKey(pk: "USER#1", sk: "PROFILE").item)
            let holder = open(directory + "/LOCK", O_RDWR | O_CLOEXEC)
            #expect(holder >= 0)
            #expect(flock(holder, LOCK_EX) == 0)
            let started = monotonicSeconds()
            #expect {
                try table.putItem(TableKey(pk: "USER#2", sk: "PROFILE").item)
            } throws: { error in
                guard case TableError.unavailable(let message) = error else { return false }
                return message.contains("LOCK")
            }
            #expect(monotonicSeconds() - started >= 1.9)
            #expect(throws: TableError.self) { try table.getItem(TableKey(pk: "USER#1", sk: "PROFILE")) }
            #expect(TableError.unavailable("x").authError.code == .storeUnavailable)
            flock(holder, LOCK_UN)
            close(holder)
            #expect(try table.getItem(TableKey(pk: "USER#1", sk: "PROFILE")) != nil)
        }
    }

    /// Every file under `directory` with its SHA-256.
    static func snapshot(_ directory: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for name in try FileSystem.listDirectory(directory) {
            let path = directory + "/" + name
            var status = stat()
            guard stat(path, &status) == 0 else { continue }
            if status.st_mode & S_IFMT == S_IFDIR {
                result[path + "/"] = "dir"
                for (child, hash) in try snapshot(path) { result[child] = hash }
            } else {
                result[path] = SHA256.hexDigest(of: try FileSystem.readFile(path))
            }
        }
        return result
    }
}

@Suite struct ExpressionTests {
    @Test func decimalsCompareAndAddExactly() {
        func number(_ text: String) -> DecimalNumber { DecimalNumber(text)! }
        #expect(number("10") > number("9"))
        #expect(number("1.0") == number("1"))
        #expect(number("-2") < number("-1.5"))
        #expect(number("1e3") == number("1000"))
        #expect(number("0.1") + number("0.2") == number("0.3"))
        #expect((number("9223372036854775807") + number("1"))?.description == "9223372036854775808")
        #expect((number("5") + -number("7"))?.description == "-2")
        #expect((number("1.25") + -number("1.25"))?.description == "0")
        #expect(number("12345678901234567890123456789012345678") + number("1e40") == nil, "beyond 38 digits is refused")
        #expect(DecimalNumber("abc") == nil && DecimalNumber("1..2") == nil && DecimalNumber("") == nil)
    }

    @Test func stringsOrderByUTF8Bytes() {
        #expect(AttributeValue.s("Z").dynamoOrder(.s("a")) == -1)
        #expect(AttributeValue.s("é").dynamoOrder(.s("z")) == 1, "é (0xC3…) sorts after z (0x7A)")
        #expect(AttributeValue.s("1").dynamoOrder(.n("1")) == nil, "different types do not compare")
    }

    @Test func placeholdersMustBeDefined() {
        #expect(throws: TableError.self) { try ExpressionParser.condition("#a = :b", ExpressionAttributes(values: [":b": .s("x")])) }
        #expect(throws: TableError.self) { try ExpressionParser.condition("a = :b", .init()) }
        #expect(throws: Never.self) {
            try ExpressionParser.condition("a = :b", ExpressionAttributes(names: ["#unused": "x"], values: [":b": .s("x"), ":c": .n("1")]))
        }
    }

    @Test func precedenceIsNotThenAndThenOr() throws {
        let attributes = ExpressionAttributes(values: [":t": .bool(true), ":f": .bool(false)])
        let item: Item = ["a": .bool(true), "b": .bool(false)]
        func holds(_ text: String) throws -> Bool {
            ExpressionEvaluator.evaluate(try ExpressionParser.condition(text, attributes), on: item)
        }
        #expect(try holds("a = :t OR a = :f AND b = :t"))
        #expect(try !holds("(a = :t OR a = :f) AND b = :t"))
        #expect(try holds("NOT a = :f AND b = :f"))
        #expect(try !holds("NOT (a = :t AND b = :f)"))
    }
}
