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
        handlerInvocation(&table)
        changeLogCost(&table)
    }

    /// An EventBridge on loopback that accepts every entry at once.
    static func loopbackEventBridge() -> LoopbackHTTPServer? {
        try? LoopbackHTTPServer(responder: { request in
            let count = ((try? JSONValue.parse(request.body))?["Entries"]?.arrayValue ?? []).count
            let entries = JSONValue.array((0..<count).map { ["EventId": .string("e-\($0)")] })
            return .json(["FailedEntryCount": 0, "Entries": entries], headers: [("Content-Type", "application/x-amz-json-1.1")])
        })
    }

    /// What `events` needs to publish to `bridge`.
    static func environment(publishingTo bridge: LoopbackHTTPServer) -> [String: String] {
        ["AUTH_EVENT_BUS": "bench-bus", "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDBENCH",
         "AWS_SECRET_ACCESS_KEY": "bench-secret", "AWS_ENDPOINT_URL_EVENTS": bridge.baseURL]
    }

    static func handlerInvocation(_ table: inout BenchTable) {
        guard let bridge = loopbackEventBridge() else {
            table.add("events", "warm events invocation", "no loopback EventBridge could start")
            return
        }
        defer { bridge.stop() }
        let environment = environment(publishingTo: bridge).merging(["AUTH_ISSUER": "https://auth.example.test", "AUTH_LOG_LEVEL": "warning"]) { $1 }
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

    // MARK: - The local store's change log, side by side

    static let commitBlocks = 9, commitsPerBlock = 50

    /// Issue 43's local-store target: the change log must not slow a warm sign-in by more than
    /// 3 %. A sign-in's commit (its profile updated, a session and a refresh token put) on a store
    /// with the change log and on one without (`LocalTable.withoutChangeRecords`), in alternating
    /// blocks so both see the same machine, each commit followed untimed by the checkpoint a
    /// handler runs after its response; the first block of each warms up. The difference of the
    /// medians is then set against a warm sign-in's median measured here too.
    static func changeLogCost(_ table: inout BenchTable) {
        guard let work = try? FileSystem.makeTemporaryDirectory(prefix: "lambda-auth-change-log-bench") else {
            table.add("events", "change log cost", "mkdtemp failed")
            return
        }
        defer { FileSystem.removeTree(work) }
        let stores = [LocalTable(directory: work + "/with", clock: SystemClock()),
                      LocalTable.withoutChangeRecords(directory: work + "/without", clock: SystemClock())]
        var samples: [[Double]] = [[], []]
        do throws(TableError) {
            for store in stores { try store.putItem(profile) }
            for block in 0..<commitBlocks {
                for (index, store) in stores.enumerated() {
                    for run in 0..<commitsPerBlock {
                        let actions = signInCommit(session: "s-\(block)-\(run)")
                        let started = monotonicSeconds()
                        try store.transactWrite(actions)
                        let elapsed = monotonicSeconds() - started
                        if block > 0 { samples[index].append(elapsed * 1_000_000) }
                        try store.checkpointIfDue()
                    }
                }
            }
        } catch {
            table.add("events", "change log cost", "a commit failed: \(error)")
            return
        }
        let (with, without) = (percentile(samples[0], 0.5), percentile(samples[1], 0.5))
        table.add("events", "local sign-in's commit (profile, session, refresh token), median of \(samples[0].count) each: with the change log / without",
                  format(with, decimals: 0) + " / " + format(without, decimals: 0) + " µs")
        switch warmSignIn() {
        case .success(let signIn):
            let median = percentile(signIn, 0.5) * 1000
            table.add("events", "warm local signin through the Runtime API, median of \(signIn.count)", format(median, decimals: 0) + " µs")
            table.add("events", "the change log's share of a warm local sign-in ((with - without) / warm sign-in)",
                      format((with - without) / median * 100, decimals: 1) + " %", target: "<= 3 %")
        case .failure(let reason):
            table.add("events", "warm local signin", reason.description)
        }
    }

    /// A profile of a returning user with a few sessions, about as large as the flows write it.
    static let profile: Item = [
        "PK": .s("USER#bench-user"), "SK": .s("PROFILE"), "email": .s("bench-user@example.com"), "emailVerified": .bool(true),
        "displayName": .s("Bench User"), "pictureUrl": .s("https://example.com/bench-user.png"), "createdAt": .s("2026-11-27T00:00:00Z"),
        "updatedAt": .s("2026-11-27T00:00:00Z"), "lastSignInAt": .s("2026-11-27T00:00:00Z"), "identityCount": .n(1), "version": .n(1),
        "activeSessions": .m(["a": .n(1_795_000_000_000), "b": .n(1_795_000_000_001), "c": .n(1_795_000_000_002)]),
    ]

    static func signInCommit(session: String) -> [TransactWriteAction] {
        let now = ISO8601.format(SystemClock().now())
        return [
            .update(key: TableKey(pk: "USER#bench-user", sk: "PROFILE"), update: "SET lastSignInAt = :now, #version = #version + :one",
                    attributes: ExpressionAttributes(names: ["#version": "version"], values: [":now": .s(now), ":one": .n(1)])),
            .put(["PK": .s("USER#bench-user"), "SK": .s("SESSION#" + session), "status": .s("ACTIVE"), "createdAt": .s(now),
                  "lastActiveAt": .s(now), "device": .m(["platform": .s("ios"), "name": .s("a phone")]),
                  "familyKey": .s(String(repeating: "k", count: 43)), "liveGeneration": .n(1), "ttl": .n(1_900_000_000)],
                 condition: "attribute_not_exists(PK)"),
            .put(["PK": .s("USER#bench-user"), "SK": .s("REFRESH#" + session + ".1"), "GSI1PK": .s("REFRESH#" + String(repeating: "a", count: 64)),
                  "GSI1SK": .s("REFRESH"), "familyId": .s(session), "generation": .n(1), "userId": .s("bench-user"), "status": .s("ACTIVE"),
                  "secretHash": .s(String(repeating: "b", count: 64)), "createdAt": .s(now), "expiresAt": .n(1_900_000_000),
                  "ttl": .n(1_900_000_000)],
                 condition: "attribute_not_exists(PK)"),
        ]
    }

    /// A returning user's Google sign-in, resident, on a store of its own: milliseconds.
    static func warmSignIn() -> Result<[Double], BenchFailure> {
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        let now = SystemClock().nowSeconds
        func event() -> JSONValue {
            ["provider": "google", "idToken": .string(world.token(.google, subject: "returning-user", email: "returning-user@example.com", now: now))]
        }
        _ = world.invoke("signin", event())
        return ResidentHandler.measure(ProcessRunner.executable("signin"), environment: world.environment, warmUp: 20, count: 201) { _ in event() }
    }
}
