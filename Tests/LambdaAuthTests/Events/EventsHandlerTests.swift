@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `events` handler against a stand-in EventBridge that can refuse chosen entries: ordering
/// per user, retries within the invocation, and the batch item failure that makes Lambda
/// redeliver what was not delivered (contract section 22).
@Suite struct EventsHandlerTests {
    /// Accepts every entry except those `refuse` picks (it sees the event and how many times
    /// that event was offered before); keeps what was accepted, in order.
    final class FakeEventBridge: HTTPClient, Sendable {
        let refuse: @Sendable (_ event: JSONValue, _ offered: Int) -> Bool
        private let state = Mutex<(accepted: [JSONValue], offers: [String: Int], calls: [Int])>(([], [:], []))

        init(refuse: @escaping @Sendable (JSONValue, Int) -> Bool = { _, _ in false }) { self.refuse = refuse }

        var accepted: [JSONValue] { state.withLock { $0.accepted } }
        var callSizes: [Int] { state.withLock { $0.calls } }

        func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
            let body = try? JSONValue.parse(request.body)
            let entries = body?["Entries"]?.arrayValue ?? []
            var results: [JSONValue] = []
            var failed = 0
            state.withLock { state in
                state.calls.append(entries.count)
                for entry in entries {
                    let event = (try? JSONValue.parse(Array((entry["Detail"]?.stringValue ?? "").utf8))) ?? .null
                    let id = event["id"]?.stringValue ?? ""
                    let offered = state.offers[id, default: 0]
                    state.offers[id] = offered + 1
                    if refuse(event, offered) {
                        failed += 1
                        results.append(["ErrorCode": "InternalFailure", "ErrorMessage": "refused by the test"])
                    } else {
                        state.accepted.append(event)
                        results.append(["EventId": .string(id)])
                    }
                }
            }
            return HTTPResponse(status: 200, headers: [:], body: JSONValue.object(["FailedEntryCount": .number(failed), "Entries": .array(results)]).serializedBytes())
        }
    }

    static let environment = ["AUTH_EVENT_BUS": "auth-bus", "AUTH_ISSUER": "https://auth.example.com", "AWS_REGION": "eu-west-1",
                              "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
                              "AWS_ENDPOINT_URL_EVENTS": "http://127.0.0.1:9"]

    /// A batch: for each user, a session that starts and then ends, in stream order.
    static func batch(users: [String], sessionsEach: Int) -> [JSONValue] {
        var records: [JSONValue] = []
        var sequence = 1000
        for round in 0..<sessionsEach {
            for user in users {
                sequence += 1
                let key: Item = ["PK": .s("USER#\(user)"), "SK": .s("SESSION#\(user)-\(round)")]
                let change = ItemChange(key: TableKey(item: key)!, old: nil, new: key.merging(["status": .s("ACTIVE")]) { $1 },
                                        eventID: "ev-\(sequence)", sequenceNumber: String(sequence), committedAt: 1_700_000_000_000)!
                records.append(change.streamRecord(sourceARN: "arn:test"))
            }
        }
        return records
    }

    static func invoke(_ records: [JSONValue], on bridge: FakeEventBridge) throws -> JSONValue {
        let handler = try EventsHandler.fromEnvironment(environment, http: bridge, sleeper: NoSleeper())
        let context = InvocationContext(requestID: "test", logger: Logger(label: "test"))
        return try handler.handle(InvocationRequest(kind: .direct, body: ["Records": .array(records)]), context: context).body
    }

    @Test func everythingDeliveredInTensWithNoFailureReported() throws {
        let bridge = FakeEventBridge()
        let records = Self.batch(users: ["a", "b", "c", "d"], sessionsEach: 25)
        let answer = try Self.invoke(records, on: bridge)
        #expect(answer == ["batchItemFailures": []])
        #expect(bridge.accepted.count == 100)
        #expect(bridge.callSizes.allSatisfy { $0 <= 10 })
        #expect(bridge.callSizes.count == 10)
        let first = try #require(bridge.accepted.first)
        #expect(first["type"] == "session.started")
        #expect(first["source"] == "https://auth.example.com")
    }

    @Test func aRefusedEntryIsRetriedAndItsUsersLaterEventsWaitForIt() throws {
        // Each user's first event is refused twice, then accepted.
        let bridge = FakeEventBridge { event, offered in event["data"]?["sessionId"]?.stringValue?.hasSuffix("-0") == true && offered < 2 }
        let records = Self.batch(users: ["a", "b"], sessionsEach: 8)
        let answer = try Self.invoke(records, on: bridge)
        #expect(answer == ["batchItemFailures": []])
        #expect(Set(bridge.accepted.map { $0["id"]! }).count == 16)
        // EventBridge may refuse one entry of a call and accept the next: those later entries go
        // again after the refused one, so each event's last copy arrives in the user's order
        // (and `sequence` orders them whatever a consumer keeps).
        var lastCopies: [String: [String]] = [:]
        for event in bridge.accepted.reversed() {
            let user = event["subject"]!.stringValue!, sequence = event["sequence"]!.stringValue!
            if !lastCopies[user, default: []].contains(sequence) { lastCopies[user, default: []].insert(sequence, at: 0) }
        }
        for (_, sequences) in lastCopies { #expect(sequences == sequences.sorted(), "each event's last copy is in stream order") }
    }

    @Test func whatStillFailsIsReportedFromItsEarliestRecordAndRedeliveryGivesTheSameIds() throws {
        // User b's third event is always refused.
        let bridge = FakeEventBridge { event, _ in event["data"]?["sessionId"] == "b-2" }
        let records = Self.batch(users: ["a", "b", "c"], sessionsEach: 4)
        let answer = try Self.invoke(records, on: bridge)
        let failures = try #require(answer["batchItemFailures"]?.arrayValue)
        // b-2 is the 8th record (a-0 b-0 c-0 a-1 b-1 c-1 a-2 b-2 …): sequence 1008.
        #expect(failures == [["itemIdentifier": "1008"]])
        let accepted = bridge.accepted
        #expect(accepted.contains { $0["data"]?["sessionId"] == "c-3" }, "other users went on")
        // Lambda redelivers from 1008 on; the bridge now accepts: nothing is missing, and ids repeat.
        let retry = FakeEventBridge()
        let again = try Self.invoke(Array(records[7...]), on: retry)
        #expect(again == ["batchItemFailures": []])
        let ids = Set(accepted.map { $0["id"]! }).union(retry.accepted.map { $0["id"]! })
        #expect(ids.count == 12)
        // b's later event comes again after b-2, whatever the first call did with it.
        let b2 = try #require(retry.accepted.firstIndex { $0["data"]?["sessionId"] == "b-2" })
        #expect(retry.accepted.lastIndex { $0["data"]?["sessionId"] == "b-3" }.map { $0 > b2 } == true)
        let c3 = accepted.first { $0["data"]?["sessionId"] == "c-3" }?["id"]
        #expect(retry.accepted.contains { $0["id"] == c3 }, "the redelivered record has the id it had")
    }

    @Test func aStreamBatchMayBeLargerThanAnHTTPBody() {
        let records = Self.batch(users: (0..<20).map { "user-\($0)" }, sessionsEach: 5)
        let bytes = JSONValue.object(["Records": .array(records + records + records)]).serializedBytes()
        #expect(bytes.count > EventCodec.maximumBodyBytes)
        let decoded = EventCodec.decode(bytes)
        #expect((try? decoded.request.get()) != nil)
        // Any other direct event of that size is still refused unparsed.
        var other = bytes
        other.replaceSubrange(2..<9, with: Array("Recordz".utf8))
        #expect((try? EventCodec.decode(other).request.get()) == nil)
    }

    @Test func withoutABusTheHandlerIsAConfigError() {
        var environment = Self.environment
        environment["AUTH_EVENT_BUS"] = nil
        #expect(throws: AuthError.self) { try EventsHandler.fromEnvironment(environment, http: FakeEventBridge()) }
    }

    /// The executable's factory never fails: each invocation is the CONFIG_ERROR, and a stream
    /// batch's answer reports its first record, so Lambda retries the batch instead of reading
    /// the answer as everything delivered.
    @Test func withoutABusEachInvocationIsAConfigErrorThatKeepsTheBatch() throws {
        var environment = Self.environment
        environment["AUTH_EVENT_BUS"] = nil
        let records = Self.batch(users: ["a", "b"], sessionsEach: 2)
        func invoke(_ body: JSONValue) -> JSONValue {
            HandlerMain.invokeOnce(name: "events", environment: environment, event: body.serializedBytes(),
                                   factory: HandlerCatalogue.events.factory, logSink: { _ in })
        }
        let answer = invoke(["Records": .array(records)])
        #expect(answer["error"]?["code"] == "CONFIG_ERROR")
        #expect(answer["error"]?["message"]?.stringValue?.contains("AUTH_EVENT_BUS") == true, "\(answer)")
        #expect(answer["batchItemFailures"] == [["itemIdentifier": "1001"]])
        // Anything else is the CONFIG_ERROR alone.
        let other = invoke(["hello": "world"])
        #expect(other["error"]?["code"] == "CONFIG_ERROR")
        #expect(other["batchItemFailures"] == nil)
        // An invalid value is the same, naming its variable.
        environment["AUTH_EVENT_BUS"] = "auth-bus"
        environment["AUTH_EVENTS_INCLUDE_EMAIL"] = "perhaps"
        let invalid = invoke(["Records": .array(records)])
        #expect(invalid["error"]?["message"]?.stringValue?.contains("AUTH_EVENTS_INCLUDE_EMAIL") == true, "\(invalid)")
        #expect(invalid["batchItemFailures"] == [["itemIdentifier": "1001"]])
    }

    /// The executable under the Runtime API with no bus: it reaches `/next` like every handler
    /// (no init error), and the batch it is given is answered with the CONFIG_ERROR and kept.
    @Test func underTheRuntimeAPIWithoutABusTheBatchIsAnsweredAndKept() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let running = try ProcessRunner.start(ProcessRunner.executable("events"), environment: ["AWS_LAMBDA_RUNTIME_API": peer.address])
        let process = BackgroundProcess(running)
        defer { process.kill(SIGKILL) }
        try #require(peer.waitForNextRequests(1, timeout: 20), "events never asked for an event")
        let batch = JSONValue.object(["Records": .array(Self.batch(users: ["a"], sessionsEach: 2))])
        peer.enqueue(RuntimeAPIPeer.Event(requestID: "batch-1", body: batch.serializedBytes()))
        let post = try #require(peer.waitForPost(0, timeout: 20), "no answer")
        #expect(post.kind == .response && post.requestID == "batch-1")
        #expect(post.json?["error"]?["code"] == "CONFIG_ERROR")
        #expect(post.json?["batchItemFailures"] == [["itemIdentifier": "1001"]])
        #expect(peer.waitForNextRequests(2, timeout: 20), "and it serves the next")
    }
}
