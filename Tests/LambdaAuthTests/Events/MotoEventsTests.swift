@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Synchronization
import Testing

/// Contract section 22 end to end on moto_server: flows on DynamoDB, the table's stream read with
/// DynamoDB Streams' own API, the `events` handler putting to an EventBridge bus whose rule feeds
/// an SQS queue, and the queue read back. Every committed change arrives once (by `id`), in each
/// user's order, a refused request adds nothing, a batch delivered twice gives the same ids, and
/// a PutEvents that fails some entries ends with everything delivered.
@Suite(.serialized) struct MotoEventsTests {
    /// moto's DynamoDB Streams, EventBridge and SQS through their JSON protocols, signed as AWS's.
    struct MotoAWS {
        let endpoint: String

        func call(_ signing: String, _ prefix: String, version: String, _ operation: String, _ body: JSONValue) throws -> JSONValue {
            let client = AWSJSONClient(service: AWSJSONClient.Service(signingName: signing, targetPrefix: prefix, jsonVersion: version,
                                                                      displayName: signing, maximumResponseBytes: 16 << 20),
                                       endpoint: endpoint, region: MotoServer.region, credentials: MotoServer.credentials,
                                       http: CurlHTTPClient(), sleeper: NoSleeper())
            return try client.call(operation, body)
        }

        func events(_ operation: String, _ body: JSONValue) throws -> JSONValue {
            try call("events", "AWSEvents.", version: "1.1", operation, body)
        }

        func sqs(_ operation: String, _ body: JSONValue) throws -> JSONValue {
            try call("sqs", "AmazonSQS.", version: "1.0", operation, body)
        }

        /// A bus whose rule sends every `lambda-auth` event to a new queue.
        func busToQueue() throws -> (bus: String, queueURL: String) {
            let name = "auth-events-" + SystemRandomSource().bytes(6).hexString
            _ = try events("CreateEventBus", ["Name": .string(name)])
            let queueURL = try #require(try sqs("CreateQueue", ["QueueName": .string(name)])["QueueUrl"]?.stringValue)
            let attributes = try sqs("GetQueueAttributes", ["QueueUrl": .string(queueURL), "AttributeNames": ["QueueArn"]])
            let queueARN = try #require(attributes["Attributes"]?["QueueArn"]?.stringValue)
            _ = try events("PutRule", ["Name": "all-auth-events", "EventBusName": .string(name),
                                       "EventPattern": .string(#"{"source": ["lambda-auth"]}"#)])
            _ = try events("PutTargets", ["Rule": "all-auth-events", "EventBusName": .string(name),
                                          "Targets": [["Id": "queue", "Arn": .string(queueARN)]]])
            // moto loads its rule-to-queue path on first use, slowly enough for a first PutEvents
            // to time out (and be retried, duplicating): warmed up here, with an event no rule takes.
            _ = try events("PutEvents", ["Entries": [["Source": "warm-up", "DetailType": "warm-up", "Detail": "{}",
                                                      "EventBusName": .string(name)]]])
            return (name, queueURL)
        }

        func streamRecords(table: String) throws -> [JSONValue] {
            try DynamoDBStreamReader(endpoint: endpoint, region: MotoServer.region, credentials: MotoServer.credentials).records(table: table)
        }

        /// Every message of the queue: the CloudEvents inside EventBridge's envelopes, in arrival order.
        func drain(_ queueURL: String) throws -> [JSONValue] {
            var events: [JSONValue] = []
            while true {
                let answer = try sqs("ReceiveMessage", ["QueueUrl": .string(queueURL), "MaxNumberOfMessages": 10, "WaitTimeSeconds": 0])
                let messages = answer["Messages"]?.arrayValue ?? []
                if messages.isEmpty { return events }
                for message in messages {
                    let envelope = try JSONValue.parse(Array((message["Body"]?.stringValue ?? "").utf8))
                    #expect(envelope["source"] == "lambda-auth")
                    #expect(envelope["detail-type"] == envelope["detail"]?["type"])
                    events.append(envelope["detail"] ?? .null)
                    _ = try sqs("DeleteMessage", ["QueueUrl": .string(queueURL), "ReceiptHandle": message["ReceiptHandle"] ?? .null])
                }
            }
        }
    }

    /// EventBridge's front door for the handler: refuses the entries `refuse` picks and accepts
    /// the rest at once, answering as PutEvents does when some entries fail; what it accepted
    /// goes on to moto's bus afterwards (`forward`), through its rule to the queue. Answering
    /// before moto has them keeps a slow moto (one request at a time, shared with every suite
    /// running) from turning into the handler's timeouts, its retries and more requests queued
    /// behind them: forwarded while the handler waited, one slow PutEvents hung the test.
    final class FailingPutEvents: Sendable {
        /// How often each event was offered, and the entries accepted in order.
        final class Ledger: Sendable {
            let offers = Mutex<[String: Int]>([:])
            let accepted = Mutex<[JSONValue]>([])
        }

        let server: LoopbackHTTPServer
        private let ledger = Ledger()

        init(refuse: @escaping @Sendable (JSONValue, Int) -> Bool) throws {
            let ledger = self.ledger
            server = try LoopbackHTTPServer { request in
                guard request.headers["x-amz-target"] == "AWSEvents.PutEvents", let body = try? JSONValue.parse(request.body) else {
                    return .drop
                }
                var results: [JSONValue] = []
                var failed = 0
                for entry in body["Entries"]?.arrayValue ?? [] {
                    let event = (try? JSONValue.parse(Array((entry["Detail"]?.stringValue ?? "").utf8))) ?? .null
                    let id = event["id"]?.stringValue ?? ""
                    let offered = ledger.offers.withLock { offers in
                        defer { offers[id, default: 0] += 1 }
                        return offers[id, default: 0]
                    }
                    if refuse(event, offered) {
                        failed += 1
                        results.append(["ErrorCode": "InternalFailure", "ErrorMessage": "refused by the test's proxy"])
                    } else {
                        ledger.accepted.withLock { $0.append(entry) }
                        results.append(["EventId": .string(SystemRandomSource().bytes(8).hexString)])
                    }
                }
                return .json(["FailedEntryCount": .number(failed), "Entries": .array(results)],
                             headers: [("Content-Type", "application/x-amz-json-1.1")])
            }
        }

        /// Puts every entry accepted so far on moto's bus, in the order accepted, 10 a call.
        func forward(to upstream: String) throws {
            let entries = ledger.accepted.withLock { $0 }
            let aws = MotoAWS(endpoint: upstream)
            for start in stride(from: 0, to: entries.count, by: 10) {
                let answer = try aws.events("PutEvents", ["Entries": .array(Array(entries[start..<min(entries.count, start + 10)]))])
                #expect(answer["FailedEntryCount"]?.int64Value == 0, "\(answer)")
            }
        }
    }

    static func handler(bus: String, endpoint: String) throws -> EventsHandler {
        try EventsHandler.fromEnvironment([
            "AUTH_EVENT_BUS": bus, "AUTH_ISSUER": "https://auth.example.test", "AWS_REGION": MotoServer.region,
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_ENDPOINT_URL_EVENTS": endpoint,
        ], http: CurlHTTPClient(), sleeper: NoSleeper())
    }

    static func publish(_ records: [JSONValue], with handler: EventsHandler) throws -> JSONValue {
        let context = InvocationContext(requestID: "moto", logger: Logger(label: "moto"))
        return try handler.handle(InvocationRequest(kind: .direct, body: ["Records": .array(records)]), context: context).body
    }

    /// What the stream's records mean, by the same mapping the handler uses: the events expected.
    static func expected(_ records: [JSONValue]) throws -> [AuthEvent] {
        try records.compactMap { record in
            ItemEvents.event(for: try ItemChange(streamRecord: record), options: ItemEvents.Options(source: "https://auth.example.test"))
        }
    }

    /// Flows that touch every event kind the table can publish, on `world`; returns every secret
    /// the responses held (tokens, credentials) for the search in the events.
    static func runFlows(_ world: FlowWorld) throws -> [String] {
        var secrets: [String] = []
        func keep(_ response: JSONValue) {
            for path in [["tokens", "accessToken"], ["tokens", "refreshToken"], ["credentials", "secretAccessKey"],
                         ["credentials", "sessionToken"]] {
                var value: JSONValue? = response
                for name in path { value = value?[name] }
                if let text = value?.stringValue { secrets.append(text) }
            }
        }
        let first = world.signIn(token: world.googleToken(subject: "moto-events-1", email: "moto-1@example.com"))
        keep(first)
        let access = try #require(first["tokens"]?["accessToken"])
        let second = world.signIn(token: world.googleToken(subject: "moto-events-1", email: "moto-1@example.com"))
        keep(second)
        #expect(world.run("link-provider", ["accessToken": access, "provider": "apple",
                                            "idToken": .string(world.appleToken(subject: "000111.moto.1"))]).errorCode == nil)
        #expect(world.run("link-provider", ["accessToken": access, "provider": "apple", "action": "unlink"]).errorCode == nil)
        let refreshed = world.run("refresh", ["refreshToken": try #require(second["tokens"]?["refreshToken"])])
        #expect(refreshed.errorCode == nil)
        keep(refreshed.responseBody ?? .null)
        #expect(world.run("signout", ["accessToken": try #require(second["tokens"]?["accessToken"])]).errorCode == nil)
        let guest = world.run("signin", ["provider": "guest"])
        #expect(guest.errorCode == nil, "\(guest.stdoutText)")
        keep(guest.responseBody ?? .null)
        let doomed = world.signIn(token: world.googleToken(subject: "moto-events-2", email: "moto-2@example.com"))
        keep(doomed)
        #expect(world.run("delete-account", ["accessToken": try #require(doomed["tokens"]?["accessToken"])]).errorCode == nil)
        return secrets
    }

    @Test func everyCommittedChangeArrivesOnceInEachUsersOrder() throws {
        let world = try FlowWorld(["AUTH_GUEST": "on"], backend: .dynamoDB)
        let moto = try MotoServer.shared()
        let aws = MotoAWS(endpoint: moto.endpoint)
        let table = try #require(world.dynamoDBTableName)
        let (bus, queueURL) = try aws.busToQueue()
        let secrets = try Self.runFlows(world)

        // A refused request commits nothing, so it publishes nothing.
        let before = try aws.streamRecords(table: table)
        let refused = world.run("signin", ["provider": "google", "idToken": .string(world.googleToken(subject: "x", changes: ["aud": "elsewhere"]))])
        #expect(refused.errorCode == "INVALID_AUDIENCE")
        let records = try aws.streamRecords(table: table)
        #expect(try Self.expected(records).count == Self.expected(before).count)

        let expected = try Self.expected(records)
        #expect(Set(expected.map(\.type)) == [.userCreated, .userDeleted, .identityLinked, .identityUnlinked, .sessionStarted, .sessionEnded],
                "\(expected.map(\.type.rawValue))")
        let handler = try Self.handler(bus: bus, endpoint: moto.endpoint)
        // Lambda's batches of 100, then the whole stream again: a redelivery.
        var start = 0
        while start < records.count {
            #expect(try Self.publish(Array(records[start..<min(records.count, start + 100)]), with: handler) == ["batchItemFailures": []])
            start += 100
        }
        #expect(try Self.publish(records, with: handler) == ["batchItemFailures": []])

        let received = try aws.drain(queueURL)
        // At least twice each: the batch was delivered twice (a PutEvents retried after a timeout
        // may add copies, which the ids tell apart).
        #expect(received.count >= 2 * expected.count)
        #expect(Dictionary(grouping: received.compactMap { $0["id"]?.stringValue }, by: { $0 }).values.allSatisfy { $0.count >= 2 })
        var firstCopies: [JSONValue] = []
        var seen: Set<String> = []
        for event in received where seen.insert(event["id"]?.stringValue ?? "").inserted { firstCopies.append(event) }
        #expect(firstCopies.map { $0["id"]?.stringValue } == expected.map(\.id), "once each by id, in the stream's order")
        for user in Set(expected.map(\.subject)) {
            let sequences = firstCopies.filter { $0["subject"]?.stringValue == user }.compactMap { $0["sequence"]?.stringValue }
            #expect(sequences == sequences.sorted())
        }
        let ended = firstCopies.filter { $0["type"] == "session.ended" }.map { $0["data"]?["reason"] }
        #expect(ended.contains("signout") && ended.contains("deleted"), "\(ended)")

        // Nothing secret in any event: no token or credential of the responses, no hash or key of the items.
        let text = received.map { $0.serialized() }.joined(separator: "\n")
        var needles = secrets
        for record in records {
            for image in [record["dynamodb"]?["NewImage"], record["dynamodb"]?["OldImage"]] {
                for name in ["secretHash", "GSI1PK", "familyKey", "successorNonce", "sealedToken", "codeHash"] {
                    if let value = image?[name]?["S"]?.stringValue { needles.append(value) }
                }
            }
        }
        needles += ["moto-1@example.com", "moto-2@example.com"]
        #expect(needles.count > 10)
        #expect(needles.filter { text.contains($0) } == [])

        // The CloudEvents SDK from PyPI reads every one.
        let output = try ProcessRunner.run("/usr/bin/env", arguments: ["python3", TestSupport.scriptPath("cloudevents_check.py")],
                                           environment: Environment.current(), stdin: Array((text + "\n").utf8))
        let checked = try #require(output.json, "\(output.stderrText)")
        #expect(checked["problems"] == [])
        #expect(checked["checked"]?.int64Value == Int64(received.count))
    }

    @Test func entriesPutEventsRefusesAreRetriedOrRedeliveredUntilAllArrive() throws {
        let world = try FlowWorld(["AUTH_GUEST": "on"], backend: .dynamoDB)
        let moto = try MotoServer.shared()
        let aws = MotoAWS(endpoint: moto.endpoint)
        let (bus, queueURL) = try aws.busToQueue()
        _ = try Self.runFlows(world)
        let records = try aws.streamRecords(table: try #require(world.dynamoDBTableName))
        let expected = try Self.expected(records)
        // Every session.started is refused four times: past the handler's retries, so the first
        // invocation reports it and Lambda redelivers from there.
        let proxy = try FailingPutEvents { event, offered in event["type"] == "session.started" && offered < 4 }
        defer { proxy.server.stop() }
        let handler = try Self.handler(bus: bus, endpoint: proxy.server.baseURL)
        var batch = records
        var invocations = 0
        var reported: [String] = []
        while !batch.isEmpty, invocations < 20 {
            invocations += 1
            let answer = try Self.publish(batch, with: handler)
            guard let failure = answer["batchItemFailures"]?.arrayValue?.first?["itemIdentifier"]?.stringValue else { break }
            reported.append(failure)
            // As Lambda does: the batch again from the reported record on.
            let index = try #require(batch.firstIndex { $0["dynamodb"]?["SequenceNumber"]?.stringValue == failure })
            batch = Array(batch[index...])
        }
        #expect(!reported.isEmpty, "the refused records were reported")
        // Only refused ones: a reported record is one whose event is a session.started.
        let started = Set(try records.filter { record in
            ItemEvents.event(for: try ItemChange(streamRecord: record), options: ItemEvents.Options(source: "x"))?.type == .sessionStarted
        }.compactMap { $0["dynamodb"]?["SequenceNumber"]?.stringValue })
        #expect(Set(reported).isSubset(of: started), "\(reported)")
        #expect(invocations < 20)
        try proxy.forward(to: moto.endpoint)
        let received = try aws.drain(queueURL)
        #expect(Set(received.compactMap { $0["id"]?.stringValue }) == Set(expected.map(\.id)), "every event delivered in the end")
    }

    /// Every recorded scenario replayed on both backends (`authctl replay --events-out`): the
    /// local change log publishes what the DynamoDB Stream publishes (ids and times aside). The
    /// items of one transaction have no order between them in a stream, so each scenario's events
    /// compare as a multiset; an erased account's records leave the local change log with it, so
    /// the users DynamoDB says were deleted are compared up to their deletion's step.
    @Test func theLocalChangeLogPublishesWhatTheStreamPublishesForEveryScenario() throws {
        let directory = TestSupport.temporaryDirectory("scenario-events")
        defer { TestSupport.removeTree(directory) }
        let scenarios = try FileSystem.listDirectory(TestSupport.packageRoot + "/Events/scenarios").filter { $0.hasSuffix(".json") }.sorted()
        let paths = scenarios.map { TestSupport.packageRoot + "/Events/scenarios/" + $0 }
        func replay(_ backend: FlowWorld.Backend) throws -> [String: [JSONValue]] {
            let output = directory + "/\(backend).jsonl"
            var arguments = ["replay", "--events-out", output]
            var environment: [String: String] = [:]
            if backend == .dynamoDB {
                arguments += ["--backend", "dynamodb", "--endpoint", try MotoServer.shared().endpoint]
                environment = ["AWS_REGION": MotoServer.region, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"]
            }
            let run = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments + paths, environment: environment)
            try #require(run.exitCode == 0, "\(run.stdoutText.suffix(2000)) \(run.stderrText.suffix(1000))")
            var byScenario: [String: [JSONValue]] = [:]
            for line in String(decoding: try FileSystem.readFile(output), as: UTF8.self).split(separator: "\n") {
                let event = try JSONValue.parse(String(line))
                byScenario[event["scenario"]?.stringValue ?? "", default: []].append(event)
            }
            return byScenario
        }
        let local = try replay(.local), stream = try replay(.dynamoDB)
        #expect(stream.values.reduce(0) { $0 + $1.count } > 150, "the scenarios publish")
        for scenario in scenarios {
            let deleted = Set((stream[scenario] ?? []).filter { $0["type"] == "user.deleted" }.compactMap { $0["data"]?["userId"] })
            func kept(_ events: [JSONValue]?) -> [String] {
                (events ?? []).filter { !deleted.contains($0["data"]?["userId"] ?? .null) }.map { $0.serialized() }.sorted()
            }
            #expect(kept(local[scenario]) == kept(stream[scenario]), "\(scenario)")
        }
    }
}
