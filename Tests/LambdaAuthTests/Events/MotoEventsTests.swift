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
                // Hidden for an hour once read, rather than deleted one call a message: the queue
                // is this test's own, and a delete per message cost the scenario test minutes.
                let answer = try sqs("ReceiveMessage", ["QueueUrl": .string(queueURL), "MaxNumberOfMessages": 10, "WaitTimeSeconds": 0,
                                                        "VisibilityTimeout": 3600])
                let messages = answer["Messages"]?.arrayValue ?? []
                if messages.isEmpty { return events }
                for message in messages {
                    let envelope = try JSONValue.parse(Array((message["Body"]?.stringValue ?? "").utf8))
                    #expect(envelope["source"] == "lambda-auth")
                    #expect(envelope["detail-type"] == envelope["detail"]?["type"])
                    events.append(envelope["detail"] ?? .null)
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

    /// Flows that touch every event kind a session's life publishes, on `world`.
    static func runFlows(_ world: FlowWorld) throws {
        let first = world.signIn(token: world.googleToken(subject: "moto-events-1", email: "moto-1@example.com"))
        let access = try #require(first["tokens"]?["accessToken"])
        let second = world.signIn(token: world.googleToken(subject: "moto-events-1", email: "moto-1@example.com"))
        #expect(world.run("link-provider", ["accessToken": access, "provider": "apple",
                                            "idToken": .string(world.appleToken(subject: "000111.moto.1"))]).errorCode == nil)
        #expect(world.run("link-provider", ["accessToken": access, "provider": "apple", "action": "unlink"]).errorCode == nil)
        #expect(world.run("refresh", ["refreshToken": try #require(second["tokens"]?["refreshToken"])]).errorCode == nil)
        #expect(world.run("signout", ["accessToken": try #require(second["tokens"]?["accessToken"])]).errorCode == nil)
        let guest = world.run("signin", ["provider": "guest"])
        #expect(guest.errorCode == nil, "\(guest.stdoutText)")
        let doomed = world.signIn(token: world.googleToken(subject: "moto-events-2", email: "moto-2@example.com"))
        #expect(world.run("delete-account", ["accessToken": try #require(doomed["tokens"]?["accessToken"])]).errorCode == nil)
    }

    @Test func entriesPutEventsRefusesAreRetriedOrRedeliveredUntilAllArrive() throws {
        let world = try FlowWorld(["AUTH_GUEST": "on"], backend: .dynamoDB)
        let moto = try MotoServer.shared()
        let aws = MotoAWS(endpoint: moto.endpoint)
        let (bus, queueURL) = try aws.busToQueue()
        try Self.runFlows(world)
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

    /// One step of a replayed scenario, as `authctl replay --events-out` writes it (`ScenarioEvents`).
    struct PublishedStep {
        let line: JSONValue
        var scenario: String { line["scenario"]?.stringValue ?? "" }
        var step: Int64 { line["step"]?.int64Value ?? 0 }
        var refused: Bool { (line["status"]?.int64Value ?? 500) >= 400 }
        var label: String { "\(scenario) step \(step) (\(line["handler"]?.stringValue ?? ""))" }
        var records: [JSONValue] { line["records"]?.arrayValue ?? [] }
        var localEvents: [JSONValue] { line["events"]?.arrayValue ?? [] }

        /// Every token, code, credential, key and email the step sent or received or its store
        /// held: the request, the response, the key settings, the local store's items, the
        /// stream's images.
        var secrets: [String] {
            var found = EventChecks.secrets(inMessage: line["request"] ?? .null) + EventChecks.secrets(inMessage: line["response"] ?? .null)
            for case .string(let value) in line["keys"]?.objectValue?.values.map({ $0 }) ?? [] { found += EventChecks.secrets(inSetting: value) }
            for item in line["items"]?.arrayValue ?? [] { found += EventChecks.secrets(inItem: item) }
            for record in records {
                for image in [record["dynamodb"]?["NewImage"], record["dynamodb"]?["OldImage"]] {
                    found += EventChecks.secrets(inItem: image ?? .null)
                }
            }
            return found
        }
    }

    /// Every recorded scenario, replayed once on each backend (`authctl replay --events-out`),
    /// carries all of contract section 22's checks. DynamoDB: each scenario's stream records go to
    /// the `events` handler in Lambda's batches of 100, then all of them again (a redelivery);
    /// the handler puts to moto's EventBridge, whose rule feeds an SQS queue, and the queue is
    /// read back: every committed change arrives exactly once by `id` (twice in all, the same
    /// `id`), as the event its record means, in each user's order; no refused request's step
    /// publishes. The local store: each step's events, as `authctl events tail` prints them, are
    /// the events the queue delivered for that step (ids, times and the random ids aside). Every
    /// event of both is read by the CloudEvents SDK from PyPI and holds no token, hash, code, key
    /// or email of the scenario or the store.
    @Test func everyScenarioPublishesEachCommittedChangeOnceThroughEventBridgeAndTheLocalChangeLog() throws {
        let moto = try MotoServer.shared()
        let aws = MotoAWS(endpoint: moto.endpoint)
        let (bus, queueURL) = try aws.busToQueue()
        let directory = TestSupport.temporaryDirectory("scenario-events")
        defer { TestSupport.removeTree(directory) }
        let scenarios = try FileSystem.listDirectory(TestSupport.packageRoot + "/Events/scenarios").filter { $0.hasSuffix(".json") }.sorted()
        let paths = scenarios.map { TestSupport.packageRoot + "/Events/scenarios/" + $0 }
        func replay(_ backend: FlowWorld.Backend) throws -> [PublishedStep] {
            let output = directory + "/\(backend).jsonl"
            var arguments = ["replay", "--events-out", output]
            var environment: [String: String] = [:]
            if backend == .dynamoDB {
                arguments += ["--backend", "dynamodb", "--endpoint", moto.endpoint]
                environment = ["AWS_REGION": MotoServer.region, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"]
            }
            let run = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments + paths, environment: environment)
            try #require(run.exitCode == 0, "\(run.stdoutText.suffix(2000)) \(run.stderrText.suffix(1000))")
            return try String(decoding: try FileSystem.readFile(output), as: UTF8.self).split(separator: "\n")
                .map { PublishedStep(line: try JSONValue.parse(String($0))) }
        }
        let local = try replay(.local), stream = try replay(.dynamoDB)
        try #require(local.map(\.label) == stream.map(\.label), "both replays ran the same steps")
        #expect(Set(stream.map(\.scenario)) == Set(scenarios))

        // What each record means, by the handler's own mapping, and which step committed it.
        var expected: [AuthEvent] = []
        var stepOf: [String: Int] = [:]
        for (index, step) in stream.enumerated() {
            for event in try Self.expected(step.records) {
                stepOf[event.id] = index
                expected.append(event)
            }
        }
        #expect(Set(expected.map(\.id)).count == expected.count, "one event per record at most, each its own id")
        #expect(expected.count > 150, "the scenarios publish")
        #expect(Set(expected.map(\.type)).isSuperset(of: [.userCreated, .userUpdated, .userDeleted, .identityLinked, .identityUnlinked,
                                                        .guestUpgraded, .sessionStarted, .sessionEnded, .passkeyRegistered]),
                "\(Set(expected.map(\.type.rawValue)).sorted())")
        // A refused request commits nothing, so its step publishes nothing; but for one refusal
        // that commits: a refresh token used again past its grace period is refused and, in the
        // same commit, ends its session (contract section 13), which publishes `session.ended`
        // with `reason` `reuse` and nothing else.
        func refusedButPublishing(_ step: PublishedStep, _ events: [JSONValue]) -> Bool {
            let reuse = step.line["response"]?["error"]?["code"] == "REFRESH_TOKEN_REUSED"
                && events.allSatisfy { $0["type"] == "session.ended" && $0["data"]?["reason"] == "reuse" }
            return step.refused && !events.isEmpty && !reuse
        }
        let published = try stream.map { try Self.expected($0.records).map(\.json) }
        #expect(stream.indices.filter { refusedButPublishing(stream[$0], published[$0]) }.map { stream[$0].label } == [])
        #expect(local.filter { refusedButPublishing($0, $0.localEvents) }.map(\.label) == [])
        #expect(stream.filter(\.refused).count > 50, "the scenarios refuse requests")
        #expect(stream.indices.contains { stream[$0].refused && !published[$0].isEmpty }, "a reuse's refusal ends its session")

        // As Lambda delivers: each scenario's stream (a table of its own) in batches of 100; then
        // every batch once more, a redelivery.
        let handler = try Self.handler(bus: bus, endpoint: moto.endpoint)
        let batches = Dictionary(grouping: stream, by: \.scenario).sorted { $0.key < $1.key }.flatMap { entry -> [[JSONValue]] in
            let records = entry.value.flatMap(\.records)
            return stride(from: 0, to: records.count, by: 100).map { Array(records[$0..<min(records.count, $0 + 100)]) }
        }
        for delivery in 1...2 {
            for batch in batches {
                #expect(try Self.publish(batch, with: handler) == ["batchItemFailures": []], "delivery \(delivery)")
            }
        }
        let received = try aws.drain(queueURL)
        let copies = Dictionary(grouping: received, by: { $0["id"]?.stringValue ?? "" })
        #expect(Set(copies.keys) == Set(expected.map(\.id)), "every committed change, and nothing else")
        // Twice each (a PutEvents retried after a timeout may add copies): the same id both times.
        #expect(copies.values.filter { $0.count < 2 }.map { $0[0]["type"] } == [])
        var firstCopies: [JSONValue] = []
        var seen: Set<String> = []
        for event in received where seen.insert(event["id"]?.stringValue ?? "").inserted { firstCopies.append(event) }
        let byID = Dictionary(uniqueKeysWithValues: expected.map { ($0.id, $0) })
        #expect(firstCopies.filter { $0 != byID[$0["id"]?.stringValue ?? ""]?.json }.map { $0.serialized() } == [],
                "each delivered event is what its record means")
        for (user, events) in Dictionary(grouping: firstCopies, by: { $0["subject"]?.stringValue ?? "" }) {
            let sequences = events.compactMap { $0["sequence"]?.stringValue }
            #expect(sequences == sequences.sorted(), "\(user): delivered in the user's order")
        }

        // The local store: each step's `events tail` output is that step's events on DynamoDB.
        // One exception, which docs/events-out.md states: a deletion erases the account from the
        // local store (its change records included) before the request answers, so the deleting
        // step's events of that user may be missing locally; they must be there on DynamoDB.
        var missingLocally = 0
        for scenario in scenarios {
            var localNames = Normaliser(), streamNames = Normaliser()
            for index in stream.indices where stream[index].scenario == scenario {
                let remote = expected.filter { stepOf[$0.id] == index }.map { streamNames.normalised($0.json) }
                let here = local[index].localEvents.map { localNames.normalised($0) }
                let erased = Set(remote.filter { $0["type"] == "user.deleted" }.compactMap { $0["subject"] })
                func of(_ events: [JSONValue], erased wanted: Bool) -> [String] {
                    events.filter { erased.contains($0["subject"] ?? .null) == wanted }.map { $0.serialized() }.sorted()
                }
                #expect(of(here, erased: false) == of(remote, erased: false), "\(stream[index].label)")
                let kept = of(here, erased: true), published = of(remote, erased: true)
                #expect(kept.allSatisfy { published.contains($0) }, "\(stream[index].label)")
                missingLocally += published.count - kept.count
            }
        }
        #expect(missingLocally < expected.count, "the local store publishes")

        // Every event, delivered or printed, read by the CloudEvents SDK; none holds a secret.
        let localEvents = local.flatMap(\.localEvents)
        let checked = try EventChecks.cloudEventsProblems(received + localEvents)
        #expect(checked.problems == [])
        #expect(checked.checked == Int64(received.count + localEvents.count))
        let needles = Set(stream.flatMap(\.secrets) + local.flatMap(\.secrets))
        #expect(needles.count > 500, "the search has what to look for")
        #expect(EventChecks.leaks(in: received + localEvents, of: needles) == [])
    }

    /// The events with what differs between runs taken out: `id`, `time`, `sequence` and
    /// `source` dropped, and the random user, session and passkey ids named `user-1`,
    /// `session-1`, … in the order they first appear in the scenario.
    struct Normaliser {
        private var names: [String: String] = [:]
        private var counts: [String: Int] = [:]

        mutating func normalised(_ event: JSONValue) -> JSONValue {
            func name(_ value: JSONValue?, as kind: String) -> JSONValue {
                guard let value = value?.stringValue else { return value ?? .null }
                if let known = names[value] { return .string(known) }
                counts[kind, default: 0] += 1
                names[value] = "\(kind)-\(counts[kind]!)"
                return .string(names[value]!)
            }
            var data = event["data"]?.objectValue ?? [:]
            for (field, kind) in [("userId", "user"), ("sessionId", "session"), ("passkeyId", "passkey")] where data[field] != nil {
                data[field] = name(data[field], as: kind)
            }
            return ["type": event["type"] ?? .null, "subject": name(event["subject"], as: "user"), "data": .object(data)]
        }
    }
}
