import LambdaAuth
import LambdaAuthTables
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// A loopback server plays a faulty DynamoDB: the client must retry what may succeed later
/// (throttling, 5xx, dropped connections) with capped, jittered backoff, give up as
/// STORE_UNAVAILABLE, and never retry a verdict (failed condition, validation error).
@Suite struct DynamoDBFaultTests {
    static let found = LoopbackHTTPServer.Response.json(["Item": ["PK": ["S": "USER#1"], "SK": ["S": "PROFILE"]]])

    func table(_ server: LoopbackHTTPServer, sleeper: RecordingSleeper, randomByte: UInt8 = 0xFF) -> DynamoDBTable {
        let client = DynamoDBClient(endpoint: server.baseURL, region: "us-east-1",
                                    credentials: AWSCredentials(accessKeyID: "AKIDFAULTTEST", secretAccessKey: "secret", sessionToken: "session"),
                                    http: CurlHTTPClient(), random: RepeatingRandomSource(byte: randomByte), sleeper: sleeper)
        return DynamoDBTable(tableName: "faulty", client: client, clock: FixedClock(1_800_000_000))
    }

    static let key = TableKey(pk: "USER#1", sk: "PROFILE")

    @Test(arguments: ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"])
    func throttlingIsRetriedThenSucceeds(type: String) throws {
        let server = try LoopbackHTTPServer.scripted([LoopbackHTTPServer.Response.dynamoDBError(type), LoopbackHTTPServer.Response.dynamoDBError(type)],
                                                     otherwise: DynamoDBFaultTests.found)
        defer { server.stop() }
        let sleeper = RecordingSleeper()
        let item = try table(server, sleeper: sleeper).getItem(DynamoDBFaultTests.key)
        #expect(item == DynamoDBFaultTests.key.item)
        #expect(server.requestCount == 3)
        // Random bytes 0xFF take the whole window: 50 ms, then 100 ms.
        #expect(sleeper.delays.map { ($0 * 1000).rounded() } == [50, 100])
    }

    @Test(arguments: [
        ("throttled", LoopbackHTTPServer.Response.dynamoDBError("ProvisionedThroughputExceededException")),
        ("internal error", LoopbackHTTPServer.Response.dynamoDBError("InternalServerError", status: 500)),
        ("503 without a body", LoopbackHTTPServer.Response(status: 503, text: "<html>busy</html>")),
        ("dropped connection", LoopbackHTTPServer.Response.drop),
    ])
    func persistentFaultsExhaustThreeRetriesThenStoreUnavailable(fault: String, response: LoopbackHTTPServer.Response) throws {
        let server = try LoopbackHTTPServer { _ in response }
        defer { server.stop() }
        let sleeper = RecordingSleeper()
        let table = table(server, sleeper: sleeper)
        do {
            try table.putItem(DynamoDBFaultTests.key.item)
            Issue.record("\(fault): the write should have failed")
        } catch {
            guard case .unavailable(let reason) = error else {
                Issue.record("\(fault): expected unavailable, got \(error)")
                return
            }
            #expect(reason.contains("after 4 attempts"))
            let contractError = AuthError.from(error)
            #expect(contractError.code == .storeUnavailable && contractError.status == 503 && contractError.retryable)
        }
        #expect(server.requestCount == 4, "\(fault): one attempt and three retries")
        #expect(sleeper.delays.map { ($0 * 1000).rounded() } == [50, 100, 200], "\(fault)")
        #expect(table.client.requestCount == 4)
    }

    @Test func jitterSpreadsDelaysOverTheWindow() throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response.dynamoDBError("ThrottlingException") }
        defer { server.stop() }
        let none = RecordingSleeper()
        _ = try? table(server, sleeper: none, randomByte: 0x00).getItem(DynamoDBFaultTests.key)
        #expect(none.delays == [0, 0, 0])
        let half = RecordingSleeper()
        _ = try? table(server, sleeper: half, randomByte: 0x80).getItem(DynamoDBFaultTests.key)
        #expect(half.delays.map { ($0 * 1000).rounded() } == [25, 50, 100])
    }

    @Test func backoffWindowDoublesUpToTheCap() {
        let policy = RetryPolicy.aws
        #expect(policy.maximumRetries == 3)
        #expect((0..<8).map { policy.window(beforeRetry: $0) } == [0.05, 0.1, 0.2, 0.4, 0.8, 1, 1, 1])
        let random = SystemRandomSource()
        for retry in 0..<8 {
            let delay = policy.delay(beforeRetry: retry, random: random)
            #expect(delay >= 0 && delay <= policy.window(beforeRetry: retry))
        }
    }

    /// Expressions outside the local store's subset are refused before anything is sent: moto
    /// answers some of them with HTTP 500, which would otherwise be retried as an outage.
    @Test func refusedExpressionsAreNeverSent() throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response.dynamoDBError("InternalServerError", status: 500) }
        defer { server.stop() }
        let table = table(server, sleeper: RecordingSleeper())
        let key = DynamoDBFaultTests.key
        let attributes = ExpressionAttributes(names: ["#n": "name"], values: [":v": .s("x")])
        let refusals: [(String, () throws(TableError) -> Void)] = [
            ("condition", { () throws(TableError) in try table.putItem(key.item, condition: "size(PK) > :v", attributes: attributes) }),
            ("update", { () throws(TableError) in
                try table.updateItem(key, update: "SET a = :v SET b = :v", condition: nil, attributes: attributes, returnValues: .none)
            }),
            ("key in update", { () throws(TableError) in
                try table.updateItem(key, update: "SET PK = :v", condition: nil, attributes: attributes, returnValues: .none)
            }),
            ("key condition", { () throws(TableError) in _ = try table.query(QueryRequest(keyCondition: "SK = :v", attributes: attributes)) }),
            ("transaction", { () throws(TableError) in
                try table.transactWrite([.put(key.item), .conditionCheck(key: TableKey(pk: "a", sk: "b"), condition: "PK = :missing")])
            }),
        ]
        for (name, refusal) in refusals {
            do {
                try refusal()
                Issue.record("\(name): should have been refused")
            } catch {
                #expect(TableConformance.isInvalidRequest(error), "\(name): \(error)")
            }
        }
        #expect(server.requestCount == 0)
    }

    /// Real DynamoDB cancels a transaction that meets another one on an item with the reason
    /// TransactionConflict: nothing was decided, so it is retried; a failed condition next to it
    /// is still a verdict.
    @Test func transactionsCancelledByConflictsAreRetried() throws {
        let conflict = LoopbackHTTPServer.Response.dynamoDBError("TransactionCanceledException", extra: [
            "CancellationReasons": [["Code": "None"], ["Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"]],
        ])
        let server = try LoopbackHTTPServer.scripted([conflict, conflict], otherwise: .json([:]))
        defer { server.stop() }
        let sleeper = RecordingSleeper()
        try table(server, sleeper: sleeper).transactWrite([.put(DynamoDBFaultTests.key.item)])
        #expect(server.requestCount == 3)
        #expect(sleeper.delays.count == 2)

        let mixed = LoopbackHTTPServer.Response.dynamoDBError("TransactionCanceledException", extra: [
            "CancellationReasons": [["Code": "ConditionalCheckFailed"], ["Code": "TransactionConflict"]],
        ])
        let verdict = try LoopbackHTTPServer { _ in mixed }
        defer { verdict.stop() }
        do {
            try table(verdict, sleeper: RecordingSleeper()).transactWrite([.put(DynamoDBFaultTests.key.item)])
            Issue.record("a failed condition must cancel the transaction")
        } catch {
            guard case .transactionCanceled(let reasons) = error else {
                Issue.record("expected transactionCanceled, got \(error)")
                return
            }
            #expect(reasons.map(\.code) == ["ConditionalCheckFailed", "TransactionConflict"])
        }
        #expect(verdict.requestCount == 1)

        let persistent = try LoopbackHTTPServer { _ in conflict }
        defer { persistent.stop() }
        #expect {
            try table(persistent, sleeper: RecordingSleeper()).transactWrite([.put(DynamoDBFaultTests.key.item)])
        } throws: { error in
            guard case TableError.unavailable = error else { return false }
            return true
        }
        #expect(persistent.requestCount == 4, "one attempt and three retries, then STORE_UNAVAILABLE")
    }

    @Test func verdictsAreNeverRetried() throws {
        let reasons: JSONValue = [["Code": "None"], ["Code": "ConditionalCheckFailed", "Message": "The conditional request failed"]]
        let cases: [(String, LoopbackHTTPServer.Response, (TableError) -> Bool)] = [
            ("condition", LoopbackHTTPServer.Response.dynamoDBError("ConditionalCheckFailedException"), { if case .conditionFailed = $0 { true } else { false } }),
            ("validation", LoopbackHTTPServer.Response.dynamoDBError("ValidationException", message: "bad expression"),
             { if case .invalidRequest(let reason) = $0 { reason.contains("bad expression") } else { false } }),
            ("transaction", LoopbackHTTPServer.Response.dynamoDBError("TransactionCanceledException", extra: ["CancellationReasons": reasons]),
             { if case .transactionCanceled(let got) = $0 { got == [.none, .conditionalCheckFailed] } else { false } }),
            ("transaction without reasons", LoopbackHTTPServer.Response.dynamoDBError(
                "TransactionCanceledException", message: "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]"),
             { if case .transactionCanceled(let got) = $0 { got == [.none, .conditionalCheckFailed] } else { false } }),
            ("credentials", LoopbackHTTPServer.Response.dynamoDBError("UnrecognizedClientException", message: "The security token included in the request is invalid."),
             { if case .unavailable(let reason) = $0 { reason.contains("UnrecognizedClientException") } else { false } }),
        ]
        for (name, response, matches) in cases {
            let server = try LoopbackHTTPServer { _ in response }
            defer { server.stop() }
            let sleeper = RecordingSleeper()
            do {
                try table(server, sleeper: sleeper).transactWrite([.put(DynamoDBFaultTests.key.item, condition: "attribute_not_exists(PK)")])
                Issue.record("\(name): expected an error")
            } catch {
                #expect(matches(error), "\(name): got \(error)")
            }
            #expect(server.requestCount == 1, "\(name) must not be retried")
            #expect(sleeper.delays.isEmpty, "\(name)")
        }
    }

    @Test func requestsAreSignedDynamoDBJSONProtocolCalls() throws {
        let server = try LoopbackHTTPServer { _ in .json(["Items": [], "Count": 0]) }
        defer { server.stop() }
        let table = table(server, sleeper: RecordingSleeper())
        _ = try table.query(QueryRequest(indexName: "GSI1", keyCondition: "GSI1PK = :h",
                                         attributes: ExpressionAttributes(names: ["#unused": "x"], values: [":h": .s("REFRESH#abc")]),
                                         scanIndexForward: false, limit: 5))
        let request = try #require(server.requests.first)
        #expect(request.method == "POST" && request.path == "/")
        #expect(request.headers["x-amz-target"] == "DynamoDB_20120810.Query")
        #expect(request.headers["content-type"] == "application/x-amz-json-1.0")
        #expect(request.headers["x-amz-security-token"] == "session")
        let authorization = try #require(request.headers["authorization"].flatMap(SigV4.Authorization.init(header:)))
        #expect(authorization.accessKeyID == "AKIDFAULTTEST" && authorization.service == "dynamodb" && authorization.region == "us-east-1")
        #expect(authorization.signedHeaders.contains("x-amz-target") && authorization.signedHeaders.contains("host"))
        let body = try JSONValue.parse(request.body)
        #expect(body == [
            "TableName": "faulty", "IndexName": "GSI1", "KeyConditionExpression": "GSI1PK = :h",
            "ExpressionAttributeValues": [":h": ["S": "REFRESH#abc"]], "ScanIndexForward": false, "Limit": 5,
        ])
    }

    @Test func malformedSuccessfulAnswersAreUnavailableNotCrashes() throws {
        for body in ["not json", "[1]", "{\"Items\": 3}", "{\"Item\": {\"PK\": {\"Q\": \"x\"}}}"] {
            let server = try LoopbackHTTPServer { _ in .init(status: 200, text: body) }
            defer { server.stop() }
            let table = table(server, sleeper: RecordingSleeper())
            #expect(throws: TableError.self, "\(body)") {
                _ = try table.getItem(DynamoDBFaultTests.key)
                _ = try table.scan(limit: nil, exclusiveStartKey: nil)
            }
            #expect(server.requestCount <= 2)
        }
    }
}
