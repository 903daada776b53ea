import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// Issue 15's figures for every handler, not only signin: a whole process in stdin mode beside
/// the exit-0 floor of the same run, and warm invocations through the Runtime API. Each handler
/// gets a request it can answer again and again (see `HandlerRequests`).
///
/// With `LAMBDA_AUTH_BASELINE_BIN` set to a directory of another commit's handler executables
/// (`swift build -c release --show-bin-path` of that checkout), each handler that exists there is
/// measured side by side with it in the same run: whole processes alternate run by run, warm
/// blocks alternate, both on the same store and requests, so a refactor's cost is read off
/// without two runs' machine noise between the figures.
enum EveryHandlerBench {
    static let warmUp = 20, warmRuns = 201
    static let baselineBlocks = 4

    static func run(_ world: FlowBench.World, executables: [(String, (path: String, label: String))], floor: Double?,
                    _ table: inout BenchTable) {
        guard let whole = HandlerRequests(world, count: FloorBench.runs),
              let warm = HandlerRequests(world, count: warmUp + warmRuns) else {
            table.add("floor", "every handler", "the accounts the requests need could not be made")
            return
        }
        for (handler, executable) in executables {
            guard let event = whole.events[handler], let warmEvent = warm.events[handler] else {
                table.add("floor", "\(handler) whole process", "no request for it in HandlerRequests")
                continue
            }
            let environment = whole.environment(for: handler, world)
            switch wholeProcess(executable.path, environment: environment, event: event) {
            case .success(let samples):
                let median = percentile(samples, 0.5)
                table.add("floor", "\(handler) whole process, stdin mode (\(executable.label)), median of \(FloorBench.runs)",
                          format(median) + " ms" + (floor.map { " (exit-0 process: " + format($0) + " ms)" } ?? ""))
            case .failure(let reason):
                table.add("floor", "\(handler) whole process", reason.description)
            }
            switch ResidentHandler.measure(executable.path, environment: warm.environment(for: handler, world), warmUp: warmUp, count: warmRuns,
                                           event: warmEvent) {
            case .success(let samples):
                table.add("floor", "warm \(handler) invocation through the Runtime API (\(executable.label)), median / p99 of \(warmRuns)",
                          format(percentile(samples, 0.5), decimals: 3) + " / " + format(percentile(samples, 0.99), decimals: 3) + " ms")
            case .failure(let reason):
                table.add("floor", "warm \(handler) invocation", reason.description)
            }
        }
        if let baseline = getenv("LAMBDA_AUTH_BASELINE_BIN").map({ String(cString: $0) }), !baseline.isEmpty {
            compare(world, executables: executables, baseline: baseline, &table)
        }
    }

    /// This build against the baseline's executables, handler by handler (see the type's comment).
    /// Each side gets requests of its own: refresh, signout and delete-account use up what they
    /// act on, and the rows above used up the first sets.
    static func compare(_ world: FlowBench.World, executables: [(String, (path: String, label: String))], baseline: String,
                        _ table: inout BenchTable) {
        let perBlock = warmRuns / baselineBlocks, perSide = baselineBlocks * (warmUp + perBlock)
        guard let wholeA = HandlerRequests(world, count: FloorBench.runs), let wholeB = HandlerRequests(world, count: FloorBench.runs),
              let warmA = HandlerRequests(world, count: perSide), let warmB = HandlerRequests(world, count: perSide) else {
            table.add("floor", "side by side with the baseline", "the accounts the requests need could not be made")
            return
        }
        for (handler, executable) in executables {
            let previous = baseline + "/" + handler
            let events = [wholeA, wholeB].compactMap { $0.events[handler] }, warmEvents = [warmA, warmB].compactMap { $0.events[handler] }
            guard FileSystem.exists(previous), events.count == 2, warmEvents.count == 2 else { continue }
            let environments = sideStores(wholeA.environment(for: handler, world), handler: handler)
            defer { for copy in environments.compactMap({ $0["AUTH_STORE"] }) where copy.hasSuffix(sideStoreSuffix(handler)) { FileSystem.removeTree(copy) } }
            var whole: [[Double]] = [[], []]
            for index in 0..<FloorBench.runs {
                // ABBA, so that the machine's drift falls on both sides alike.
                for side in index % 2 == 0 ? [0, 1] : [1, 0] {
                    let path = side == 0 ? previous : executable.path
                    let bytes = events[side](index).serializedBytes()
                    let started = monotonicSeconds()
                    let output = try? ProcessRunner.run(path, environment: environments[side], stdin: bytes)
                    if output?.json?["error"] == nil { whole[side].append((monotonicSeconds() - started) * 1000) }
                }
            }
            var warm: [[Double]] = [[], []]
            for block in 0..<baselineBlocks {
                for (side, path) in [previous, executable.path].enumerated() {
                    let offset = block * (warmUp + perBlock)
                    if case .success(let samples) = ResidentHandler.measure(path, environment: warmA.environment(for: handler, world),
                                                                            warmUp: warmUp, count: perBlock,
                                                                            event: { warmEvents[side](offset + $0) }) {
                        warm[side] += samples
                    }
                }
            }
            func row(_ what: String, _ samples: [[Double]], decimals: Int) {
                guard !samples[0].isEmpty, !samples[1].isEmpty else {
                    table.add("floor", "\(handler) \(what): baseline / this build", "a side did not answer")
                    return
                }
                let (before, now) = (percentile(samples[0], 0.5), percentile(samples[1], 0.5))
                table.add("floor", "\(handler) \(what), medians of \(samples[0].count) / \(samples[1].count): baseline / this build",
                          format(before, decimals: decimals) + " / " + format(now, decimals: decimals) + " ms ("
                              + (now >= before ? "+" : "") + format((now - before) / before * 100, decimals: 1) + " %)")
            }
            row("whole process, side by side", whole, decimals: 2)
            row("warm invocation, side by side", warm, decimals: 3)
        }
    }

    /// Each side's whole processes on a copy of the world's store of its own. On one shared store
    /// a checkpoint, due every few commits (a returning sign-in at the session limit: every
    /// fourth), fell on whichever side the ABBA order put at that position each time: the same
    /// side, when the period matched the order's, which read as one build 40 % slower than the
    /// other in either direction from run to run. On its own copy each side pays the checkpoints
    /// its own records bring.
    static func sideStores(_ environment: [String: String], handler: String) -> [[String: String]] {
        guard let store = environment["AUTH_STORE"], store.hasPrefix("/") else { return [environment, environment] }
        return (0..<2).map { side in
            let copy = store + "-\(side)" + sideStoreSuffix(handler)
            FileSystem.removeTree(copy)
            guard (try? ProcessRunner.run("/bin/cp", arguments: ["-a", store, copy]))?.exitCode == 0 else { return environment }
            return environment.merging(["AUTH_STORE": copy]) { $1 }
        }
    }

    static func sideStoreSuffix(_ handler: String) -> String { "-side-by-side-" + handler }

    /// Milliseconds from spawn to exit of each run, which must answer without an `error`;
    /// `beforeEach` runs untimed before each (the floor, sampled alternately with it).
    static func wholeProcess(_ executable: String, environment: [String: String], event: (Int) -> JSONValue,
                             beforeEach: () -> Void = {}) -> Result<[Double], BenchFailure> {
        var samples: [Double] = []
        for index in 0..<FloorBench.runs {
            beforeEach()
            let bytes = event(index).serializedBytes()
            let started = monotonicSeconds()
            let output = try? ProcessRunner.run(executable, environment: environment, stdin: bytes)
            let elapsed = (monotonicSeconds() - started) * 1000
            guard let output, let answer = output.json, answer["error"] == nil else {
                return .failure(BenchFailure("run \(index) failed: \(output?.stdoutText.prefix(200) ?? "no output")"))
            }
            samples.append(elapsed)
        }
        return .success(samples)
    }
}

/// One request per handler and index, each answerable on its own: a returning user's sign-in, a
/// link and an unlink of Apple in turn, that user's sessions, the JWKS document, an Apple
/// notification about nobody, a code to a new address, the caller's passkeys and second factor,
/// the authorizer asked about the caller's token, a stream batch of 100 new sessions published
/// to a loopback EventBridge; refresh, signout and delete-account each act on a guest of their
/// own per index (signed in beforehand, not timed), as they use up what they act on.
struct HandlerRequests {
    let events: [String: (Int) -> JSONValue]
    /// Lives as long as the requests: `events` publishes to it.
    private let eventBridge: LoopbackHTTPServer

    /// The world's environment, and what `events` needs beside it.
    func environment(for handler: String, _ world: FlowBench.World) -> [String: String] {
        guard handler == HandlerCatalogue.events.name else { return world.environment }
        return world.environment.merging(EventsBench.environment(publishingTo: eventBridge)) { $1 }
    }

    init?(_ world: FlowBench.World, count: Int) {
        let now = SystemClock().nowSeconds
        // The sign-ins are another user's: theirs would evict the caller's session the others present.
        let google = world.token(.google, subject: "every-signin-\(count)", email: "every-signin-\(count)@example.com", now: now)
        let caller = world.token(.google, subject: "every-caller-\(count)", email: "every-caller-\(count)@example.com", now: now)
        let apple = world.token(.apple, subject: "000123.every-\(count)", email: nil, now: now)
        guard let accessToken = world.invoke("signin", ["provider": "google", "idToken": .string(caller)]).body["tokens"]?["accessToken"] else {
            return nil
        }
        func guests() -> [JSONValue] { (0..<count).compactMap { _ in world.invoke("signin", ["provider": "guest"]).body["tokens"] } }
        let refreshing = guests(), signingOut = guests(), deleting = guests()
        guard [refreshing, signingOut, deleting].allSatisfy({ $0.count == count }) else { return nil }
        guard let bridge = EventsBench.loopbackEventBridge() else { return nil }
        eventBridge = bridge
        let bearer = "Bearer " + (accessToken.stringValue ?? "")
        let authorization: JSONValue = [
            "version": "2.0", "type": "REQUEST", "routeKey": "GET /example/whoami", "rawPath": "/example/whoami",
            "routeArn": "arn:aws:execute-api:eu-west-1:123456789012:bench/$default/GET/example/whoami",
            "identitySource": [.string(bearer)], "headers": ["authorization": .string(bearer)],
            "requestContext": ["http": ["method": "GET", "path": "/example/whoami", "sourceIp": "203.0.113.7"], "requestId": "bench"],
        ]
        let streamBatch = EventsBench.batch()
        let notification: (Int) -> JSONValue = { index in
            let payload = try? world.identityProvider.appleNotification(type: "email-enabled", subject: "000999.bench-nobody",
                                                                        audience: "com.example.bench", id: "bench-\(index)", now: now)
            return ["payload": .string(payload ?? "")]
        }
        events = [
            "signin": { _ in ["provider": "google", "idToken": .string(google)] },
            "refresh": { ["refreshToken": refreshing[$0]["refreshToken"]!] },
            "link-provider": { index in
                index % 2 == 0 ? ["provider": "apple", "idToken": .string(apple), "accessToken": accessToken]
                    : ["provider": "apple", "action": "unlink", "accessToken": accessToken]
            },
            "signout": { ["refreshToken": signingOut[$0]["refreshToken"]!] },
            "sessions": { _ in ["accessToken": accessToken] },
            "delete-account": { ["accessToken": deleting[$0]["accessToken"]!] },
            "well-known": { _ in ["document": "jwks"] },
            "apple-notifications": notification,
            "otp-start": { ["email": .string("every-\(count)-\($0)@example.com")] },
            "passkey": { _ in ["action": "list", "accessToken": accessToken] },
            "mfa": { _ in ["action": "status", "accessToken": accessToken] },
            "authorizer": { _ in authorization },
            "events": { _ in streamBatch },
        ]
    }
}
