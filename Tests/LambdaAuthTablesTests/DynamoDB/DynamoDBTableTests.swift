import LambdaAuth
import LambdaAuthTables
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// The DynamoDB client against moto_server (a real DynamoDB-protocol peer on 127.0.0.1). The
/// generic table conformance suite runs against it as well; these pin the DynamoDB-specific parts.
@Suite struct DynamoDBTableTests {
    let now: Double = 1_800_000_000

    func table() throws -> DynamoDBTable {
        try MotoServer.shared().makeTable(clock: FixedClock(now))
    }

    /// The local store's suite, unchanged, each check on a fresh table. Expired items stay
    /// visible to conditions until DynamoDB's sweeper runs, so that check cannot apply here.
    @Test func passesTheConformanceSuite() throws {
        let server = try MotoServer.shared()
        try TableConformance(makeTable: { try server.makeTable(clock: FixedClock(now)) },
                             hidesExpiredItemsImmediately: false, now: Int64(now), runID: "moto",
                             knownDeviations: [.orderingAcrossTypesIsUnavailable]).runAll()
    }

    @Test func createTableIsIdempotentAndSetsUpKeysIndexAndTTL() throws {
        let moto = try MotoServer.shared()
        let table = try table()
        let again = try table.createTable(sleeper: NoSleeper())
        #expect(!again.created && !again.enabledTTL)

        let description = try #require(try table.client.call("DescribeTable", ["TableName": .string(table.tableName)])["Table"])
        #expect(description["BillingModeSummary"]?["BillingMode"]?.stringValue == "PAY_PER_REQUEST")
        let index = try #require(description["GlobalSecondaryIndexes"]?.arrayValue?.first)
        #expect(index["IndexName"]?.stringValue == "GSI1")
        #expect(index["Projection"]?["ProjectionType"]?.stringValue == "ALL")
        let ttl = try table.client.call("DescribeTimeToLive", ["TableName": .string(table.tableName)])["TimeToLiveDescription"]
        #expect(ttl?["TimeToLiveStatus"]?.stringValue == "ENABLED")
        #expect(ttl?["AttributeName"]?.stringValue == "ttl")

        // A table with other keys is refused rather than used.
        let other = "other-keys-\(SystemRandomSource().bytes(6).hexString)"
        _ = try moto.client().call("CreateTable", [
            "TableName": .string(other), "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [["AttributeName": "id", "AttributeType": "S"]],
            "KeySchema": [["AttributeName": "id", "KeyType": "HASH"]],
        ])
        #expect(throws: TableError.self) {
            try DynamoDBTable(tableName: other, client: moto.client(), clock: FixedClock(now)).createTable(sleeper: NoSleeper())
        }
    }

    @Test func putGetUpdateDeleteWithConditions() throws {
        let table = try table()
        let key = TableKey(pk: "USER#u1", sk: "PROFILE")
        var item = key.item
        item["email"] = .s("ü@example.com")
        item["count"] = .n(1)
        item["verified"] = .bool(true)
        item["picture"] = .null
        item["device"] = .m(["id": .s("d1"), "tags": .l([.s("a"), .n("2.5")])])
        item["ids"] = .ss(["x", "y"])
        try table.putItem(item)
        #expect(try table.getItem(key) == item)
        #expect(try table.getItem(TableKey(pk: "USER#u1", sk: "MISSING")) == nil)

        let notExists = "attribute_not_exists(PK)"
        expectConditionFailed { try table.putItem(item, condition: notExists, attributes: .init()) }

        // Placeholders the expressions do not use are dropped (DynamoDB would refuse them).
        let attributes = ExpressionAttributes(names: ["#c": "count", "#unused": "x"], values: [":one": .n(1), ":unused": .s("x")])
        let updated = try table.updateItem(key, update: "SET #c = #c + :one", condition: "#c = :one", attributes: attributes,
                                           returnValues: .allNew)
        #expect(updated?["count"] == .n("2"))
        let old = try table.updateItem(key, update: "REMOVE picture", condition: nil, attributes: attributes, returnValues: .allOld)
        #expect(old?["picture"] == .null && old?["count"] == .n("2"), "\(String(describing: old))")
        #expect(try table.updateItem(key, update: "SET verified = :one", condition: nil, attributes: attributes, returnValues: .none) == nil)
        expectConditionFailed {
            try table.updateItem(key, update: "SET #c = :one", condition: "#c = :one", attributes: attributes, returnValues: .none)
        }
        expectConditionFailed {
            try table.deleteItem(key, condition: "attribute_not_exists(email)", attributes: .init())
        }
        try table.deleteItem(key, condition: "attribute_exists(email)", attributes: .init())
        #expect(try table.getItem(key) == nil)
    }

    @Test func invalidExpressionsAreInvalidRequests() throws {
        let table = try table()
        #expect {
            try table.updateItem(TableKey(pk: "a", sk: "b"), update: "SET = oops", condition: nil, attributes: .init(), returnValues: .none)
        } throws: { error in
            guard case TableError.invalidRequest = error else { return false }
            return true
        }
        #expect {
            try table.putItem(["PK": .s("a")])  // no sort key
        } throws: { error in
            guard case TableError.invalidRequest = error else { return false }
            return true
        }
    }

    @Test func queriesInBothDirectionsWithPaginationAndTheIndex() throws {
        let table = try table()
        for index in 0..<7 {
            try table.putItem(["PK": .s("USER#q"), "SK": .s("SESSION#\(index)"), "GSI1PK": .s("REFRESH#h\(index % 2)"),
                               "GSI1SK": .s("S\(index)")])
        }
        try table.putItem(["PK": .s("USER#q"), "SK": .s("PROFILE")])
        let prefix = ExpressionAttributes(values: [":pk": .s("USER#q"), ":prefix": .s("SESSION#")])
        var request = QueryRequest(keyCondition: "PK = :pk AND begins_with(SK, :prefix)", attributes: prefix, limit: 3)
        var seen: [String] = []
        var pages = 0
        repeat {
            let page = try table.query(request)
            seen += page.items.compactMap { $0["SK"]?.stringValue }
            request.exclusiveStartKey = page.lastEvaluatedKey
            pages += 1
        } while request.exclusiveStartKey != nil && pages < 10
        #expect(seen == (0..<7).map { "SESSION#\($0)" })
        #expect(pages >= 3)

        let backwards = try table.query(QueryRequest(keyCondition: "PK = :pk", attributes: ExpressionAttributes(values: [":pk": .s("USER#q")]),
                                                     scanIndexForward: false))
        #expect(backwards.items.first?["SK"] == .s("SESSION#6") && backwards.items.count == 8)

        let byIndex = try table.query(QueryRequest(indexName: "GSI1", keyCondition: "GSI1PK = :h",
                                                   attributes: ExpressionAttributes(values: [":h": .s("REFRESH#h1")])))
        #expect(byIndex.items.compactMap { $0["SK"]?.stringValue } == ["SESSION#1", "SESSION#3", "SESSION#5"])
    }

    @Test func transactionsCommitWhollyOrCancelWithReasons() throws {
        let table = try table()
        let user = TableKey(pk: "USER#t", sk: "PROFILE")
        let link = TableKey(pk: "IDENTITY#google#1", sk: "LINK")
        try table.transactWrite([
            .put(user.item.merging(["n": .n(1)]) { $1 }, condition: "attribute_not_exists(PK)"),
            .put(link.item.merging(["userId": .s("t")]) { $1 }, condition: "attribute_not_exists(PK)"),
        ])
        #expect(try table.getItem(user)?["n"] == .n("1"))
        #expect(try table.getItem(link)?["userId"] == .s("t"))

        let third = TableKey(pk: "USER#t", sk: "SESSION#1")
        do {
            try table.transactWrite([
                .put(third.item),
                .update(key: user, update: "SET n = :two", condition: nil, attributes: ExpressionAttributes(values: [":two": .n(2)])),
                .conditionCheck(key: link, condition: "userId = :other", attributes: ExpressionAttributes(values: [":other": .s("someone")])),
            ])
            Issue.record("the transaction should have been cancelled")
        } catch {
            guard case .transactionCanceled(let reasons) = error else {
                Issue.record("expected a cancelled transaction, got \(error)")
                return
            }
            #expect(reasons.map(\.code) == ["None", "None", "ConditionalCheckFailed"])
        }
        // All or nothing: neither the put nor the update happened.
        #expect(try table.getItem(third) == nil)
        #expect(try table.getItem(user)?["n"] == .n("1"))
        #expect(throws: TableError.self) { try table.transactWrite([]) }
    }

    /// DynamoDB keeps expired items until swept; the client hides them from reads like the local
    /// store, while conditions (evaluated by DynamoDB) still see them, as docs/table-layout.md documents.
    @Test func expiredItemsAreHiddenFromReadsButNotFromConditions() throws {
        let table = try table()
        let expired = TableKey(pk: "USER#ttl", sk: "REFRESH#old")
        let live = TableKey(pk: "USER#ttl", sk: "REFRESH#new")
        try table.putItem(expired.item.merging(["ttl": .n(Int64(now) - 1), "GSI1PK": .s("REFRESH#x"), "GSI1SK": .s("1")]) { $1 })
        try table.putItem(live.item.merging(["ttl": .n(Int64(now) + 60), "GSI1PK": .s("REFRESH#x"), "GSI1SK": .s("2")]) { $1 })
        #expect(try table.getItem(expired) == nil)
        #expect(try table.getItem(live) != nil)
        let keys = ExpressionAttributes(values: [":pk": .s("USER#ttl")])
        #expect(try table.query(QueryRequest(keyCondition: "PK = :pk", attributes: keys)).items.map { TableKey(item: $0) } == [live])
        #expect(try table.query(QueryRequest(indexName: "GSI1", keyCondition: "GSI1PK = :g",
                                             attributes: ExpressionAttributes(values: [":g": .s("REFRESH#x")]))).items.count == 1)
        #expect(try table.scan(limit: nil, exclusiveStartKey: nil).items.map { TableKey(item: $0) } == [live])
        #expect(try table.updateItem(expired, update: "SET a = :a", condition: nil, attributes: ExpressionAttributes(values: [":a": .s("x")]),
                                     returnValues: .allNew) == nil)
        expectConditionFailed {
            try table.putItem(expired.item, condition: "attribute_not_exists(PK)", attributes: .init())
        }
    }

    @Test func scanPagesThroughEverything() throws {
        let table = try table()
        for index in 0..<5 { try table.putItem(["PK": .s("USER#s\(index)"), "SK": .s("PROFILE")]) }
        var start: Item?
        var found: Set<String> = []
        var pages = 0
        repeat {
            let page = try table.scan(limit: 2, exclusiveStartKey: start)
            found.formUnion(page.items.compactMap { $0["PK"]?.stringValue })
            start = page.lastEvaluatedKey
            pages += 1
        } while start != nil && pages < 10
        #expect(found == Set((0..<5).map { "USER#s\($0)" }))
        #expect(pages >= 3)
        #expect(table.client.requestCount >= pages)
    }
}

/// A test fails unless `body` throws `TableError.conditionFailed`.
func expectConditionFailed(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected the condition to fail", sourceLocation: sourceLocation)
    } catch TableError.conditionFailed {
    } catch {
        Issue.record("expected conditionFailed, got \(error)", sourceLocation: sourceLocation)
    }
}
