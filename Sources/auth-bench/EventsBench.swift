import LambdaAuth
import LambdaAuthTooling

/// Contract section 22: the `events` handler's warm invocation for a stream batch of 100 records
/// (100 events, 10 PutEvents calls), resident under the Runtime API, against a loopback
/// EventBridge that accepts everything at once, so the figure is the handler's own work and its
/// HTTP round trips, not a service's latency.
enum EventsBench {
    static var section: BenchSection { BenchSection(name: "events", run: run) }
    static let warmUp = 10, warmRuns = 101

    /// 100 users, each opening a session: every record publishes one event.
    static func batch() -> JSONValue {
        var records: [JSONValue] = []
        for index in 0..<100 {
            let key = TableKey(pk: "USER#bench-user-\(index)", sk: "SESSION#bench-session-\(index)")
            var image = key.item
            image["status"] = .s("ACTIVE")
            image["device"] = .m(["platform": .s("ios"), "name": .s("a phone")])
            image["createdAt"] = .s("2026-11-27T00:00:00Z")
            let change = ItemChange(key: key, old: nil, new: image, eventID: "bench-\(index)", sequenceNumber: String(1_000_000 + index),
                                    committedAt: 1_795_000_000_000)!
            records.append(change.streamRecord(sourceARN: "arn:aws:dynamodb:eu-west-1:123456789012:table/bench/stream/x"))
        }
        return ["Records": .array(records)]
    }

    static func run(_ table: inout BenchTable) {
        guard let bridge = try? LoopbackHTTPServer(responder: { request in
            let count = ((try? JSONValue.parse(request.body))?["Entries"]?.arrayValue ?? []).count
            let entries = JSONValue.array((0..<count).map { ["EventId": .string("e-\($0)")] })
            return .json(["FailedEntryCount": 0, "Entries": entries], headers: [("Content-Type", "application/x-amz-json-1.1")])
        }) else {
            table.add("events", "warm events invocation", "no loopback EventBridge could start")
            return
        }
        defer { bridge.stop() }
        let environment = ["AUTH_EVENT_BUS": "bench-bus", "AUTH_ISSUER": "https://auth.example.test", "AWS_REGION": "eu-west-1",
                           "AWS_ACCESS_KEY_ID": "AKIDBENCH", "AWS_SECRET_ACCESS_KEY": "bench-secret",
                           "AWS_ENDPOINT_URL_EVENTS": bridge.baseURL, "AUTH_LOG_LEVEL": "warning"]
        let event = batch()
        switch ResidentHandler.measure(ProcessRunner.executable("events"), environment: environment, warmUp: warmUp, count: warmRuns,
                                       event: { _ in event }) {
        case .success(let samples):
            table.add("events", "warm events invocation, a batch of 100 records (100 events, 10 PutEvents), median / p99 of \(samples.count)",
                      format(percentile(samples, 0.5), decimals: 2) + " / " + format(percentile(samples, 0.99), decimals: 2) + " ms")
        case .failure(let reason):
            table.add("events", "warm events invocation", reason.description)
        }
    }
}
