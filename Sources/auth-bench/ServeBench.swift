import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// Issue 27: sign-in and refresh through `authctl serve` (HTTP on 127.0.0.1, the API Gateway event
/// built in process, the JWT-less routes' handler code) beside the same through the Runtime API
/// (a warm handler process fed by the loopback peer, as under Lambda). One client, one request at
/// a time: requests per second is count / wall time of the loop, p50 and p99 of each request.
/// The serve samples include the client's side of HTTP (libcurl, as an app's HTTP stack would
/// be); the Runtime API samples start when the event is handed to `/next`, as RuntimeBench's.
/// Both sides run on the same configuration (FlowBench's world: local store, dev IdP keys, ES256
/// access tokens), each on its own store, so the difference is the transport and serve's gateway.
///
/// AUTH_BENCH_SERVE_ROUNDS (default 500 sign-ins; refreshes are twice that) shrinks it for a
/// quick check of the section itself.
enum ServeBench {
    static var section: BenchSection { BenchSection(name: "serve", run: run) }
    static let name = "serve"

    static var rounds: Int { Int(Environment.current()["AUTH_BENCH_SERVE_ROUNDS"] ?? "") ?? 500 }

    /// One way to reach the handlers: the `path`'s handler answers `body`; returns the answer's
    /// JSON and the request's wall time in milliseconds, or nil with a reason.
    typealias Transport = (_ path: String, _ body: JSONValue) -> Result<(JSONValue, Double), Failure>

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ table: inout BenchTable) {
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        var closers: [() -> Void] = []
        defer { closers.forEach { $0() } }
        let transports: [(String, () throws -> Transport)] = [
            ("serve (HTTP)", { try serveTransport(world, closers: &closers) }),
            ("Runtime API", { try runtimeTransport(world, closers: &closers) }),
        ]
        for (label, make) in transports {
            do {
                let transport = try make()
                try measure(label, world: world, transport: transport, table: &table)
            } catch {
                table.add(name, "sign-in and refresh through \(label)", "\(error)")
            }
        }
    }

    static func measure(_ label: String, world: FlowBench.World, transport: Transport, table: inout BenchTable) throws {
        let now = SystemClock().nowSeconds
        // ID tokens made before the clock starts: minting is the IdP's cost, not ours.
        let warmUp = 20, signIns = rounds, refreshes = 2 * rounds
        let tokens = (0..<(warmUp + signIns)).map { _ in
            world.token(.google, subject: "serve-bench-user", email: "serve-bench@example.com", now: now)
        }
        var signInSamples: [Double] = [], refreshToken: JSONValue = .null
        let signInStarted = monotonicSeconds()
        var measuredFrom = signInStarted
        for (index, token) in tokens.enumerated() {
            if index == warmUp { measuredFrom = monotonicSeconds() }
            let (body, milliseconds) = try transport("/auth/signin", ["provider": "google", "idToken": .string(token)]).get()
            guard let next = body["tokens"]?["refreshToken"] else { throw Failure(description: "sign-in failed: \(body)") }
            refreshToken = next
            if index >= warmUp { signInSamples.append(milliseconds) }
        }
        let signInSeconds = monotonicSeconds() - measuredFrom
        var refreshSamples: [Double] = []
        // One rotation chain: every refresh presents the token the previous one returned.
        for index in 0..<(warmUp + refreshes) {
            if index == warmUp { measuredFrom = monotonicSeconds() }
            let (body, milliseconds) = try transport("/auth/refresh", ["refreshToken": refreshToken]).get()
            guard let next = body["tokens"]?["refreshToken"] else { throw Failure(description: "refresh failed: \(body)") }
            refreshToken = next
            if index >= warmUp { refreshSamples.append(milliseconds) }
        }
        let refreshSeconds = monotonicSeconds() - measuredFrom
        for (operation, samples, seconds) in [("sign-in", signInSamples, signInSeconds), ("refresh", refreshSamples, refreshSeconds)] {
            table.add(name, "\(operation) through \(label): requests per second (1 client, \(samples.count) requests)",
                      format(Double(samples.count) / seconds, decimals: 0) + " /s")
            table.add(name, "\(operation) through \(label): p50 / p99",
                      format(percentile(samples, 0.5), decimals: 3) + " / " + format(percentile(samples, 0.99), decimals: 3) + " ms")
        }
    }

    /// `authctl serve` as a process on a free loopback port, on the world's configuration (its
    /// audiences are set, so no dev defaults) with a store of its own. Its log goes to /dev/null:
    /// an unread pipe would stall it, and a file would add writes to every sample.
    static func serveTransport(_ world: FlowBench.World, closers: inout [() -> Void]) throws -> Transport {
        let probe = try LoopbackHTTPServer { _ in .init() }
        let port = probe.port
        probe.stop()
        var environment = world.environment
        environment["AUTH_STORE"] = world.directory + "/serve-store"
        let process = try ProcessRunner.start("/bin/sh", arguments: ["-c", #"exec "$1" serve --port "$2" 2>/dev/null"#, "sh",
                                                                    ProcessRunner.executable("authctl"), String(port)],
                                              environment: environment)
        closers.append { process.kill(SIGTERM); _ = process.finish() }
        let http = CurlHTTPClient(), base = "http://127.0.0.1:\(port)"
        let deadline = monotonicSeconds() + 30
        while (try? http.send(HTTPRequest(url: base + "/openapi.json", timeout: 2)))?.status != 200 {
            guard monotonicSeconds() < deadline else { throw Failure(description: "authctl serve did not answer on \(port) within 30 s") }
            usleep(50_000)
        }
        return { path, body in
            let started = monotonicSeconds()
            let response: HTTPResponse
            do {
                response = try http.send(HTTPRequest(method: "POST", url: base + path, headers: [("content-type", "application/json")],
                                                     body: body.serializedBytes(), timeout: 20))
            } catch {
                return .failure(Failure(description: "\(path): \(error)"))
            }
            let milliseconds = (monotonicSeconds() - started) * 1000
            guard response.status == 200, let json = try? JSONValue.parse(response.body) else {
                return .failure(Failure(description: "\(path): \(response.status) \(String(decoding: response.body.prefix(200), as: UTF8.self))"))
            }
            return .success((json, milliseconds))
        }
    }

    /// A warm signin and a warm refresh process, each on its own loopback Runtime API peer, fed
    /// the request body as RuntimeBench feeds it; each sample is from handing the event to the
    /// blocked `/next` until the response is posted.
    static func runtimeTransport(_ world: FlowBench.World, closers: inout [() -> Void]) throws -> Transport {
        var environment = world.environment
        environment["AUTH_STORE"] = world.directory + "/runtime-store"
        var lanes: [String: (peer: RuntimeAPIPeer, counter: Counter)] = [:]
        for (path, handler) in [("/auth/signin", "signin"), ("/auth/refresh", "refresh")] {
            let peer = try RuntimeAPIPeer()
            var variables = environment
            variables["AWS_LAMBDA_RUNTIME_API"] = peer.address
            let process = try ProcessRunner.start(ProcessRunner.executable(handler), environment: variables)
            // Drain its output on a thread so a full pipe can never stall it.
            BackgroundThread.detach { _ = process.finish() }
            closers.append { process.kill(SIGKILL); peer.stop() }
            lanes[path] = (peer, Counter())
        }
        return { path, body in
            guard let (peer, counter) = lanes[path] else { return .failure(Failure(description: "no handler for \(path)")) }
            let index = counter.next()
            guard peer.waitForNextRequests(index + 1, timeout: 10) else { return .failure(Failure(description: "\(path): no /next")) }
            let started = monotonicSeconds()
            peer.enqueue(RuntimeAPIPeer.Event(requestID: "serve-bench-\(index)", body: body.serializedBytes()))
            guard let post = peer.waitForPost(index, timeout: 10) else { return .failure(Failure(description: "\(path): stalled after \(index)")) }
            guard let json = post.json, json["error"] == nil else {
                return .failure(Failure(description: "\(path): \(String(decoding: post.body.prefix(200), as: UTF8.self))"))
            }
            return .success((json, (post.receivedAt - started) * 1000))
        }
    }

    /// Invocations handed to one peer so far (the bench is one thread; a class for the closure).
    final class Counter {
        private var value = 0
        func next() -> Int {
            defer { value += 1 }
            return value
        }
    }
}
