import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 5's targets: a warm invocation through the Runtime API loop, the cold start to the
/// first `/next`, and the size of each zip. The handler runs as a real process against a
/// loopback Runtime API peer, as under Lambda.
enum RuntimeBench {
    static var section: BenchSection { BenchSection(name: "runtime") { table in
        warmInvocations(&table)
        coldStart(&table)
        zipSizes(&table)
    } }

    static let handler = "refresh"

    static func environment(_ peer: RuntimeAPIPeer, store: String) -> [String: String] {
        ["AWS_LAMBDA_RUNTIME_API": peer.address, "AUTH_STORE": store, "AUTH_LOG_LEVEL": "error"]
    }

    /// Each sample: from handing the event to the blocked `/next` until the response is posted.
    static func warmInvocations(_ table: inout BenchTable) {
        let name = "runtime"
        guard let peer = try? RuntimeAPIPeer() else {
            table.add(name, "warm \(handler) invocation", "no loopback peer could start")
            return
        }
        defer { peer.stop() }
        // A real rotation chain: each refresh presents the token the previous one returned, so
        // every sample is a full rotation transaction with its fsync.
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        let now = SystemClock().nowSeconds
        let signedIn = world.invoke("signin", ["provider": "google",
                                               "idToken": .string(world.token(.google, subject: "loop-user", email: nil, now: now))]).body
        var refreshToken = signedIn["tokens"]!["refreshToken"]!
        var variables = world.environment
        variables["AWS_LAMBDA_RUNTIME_API"] = peer.address
        let process: RunningProcess
        do {
            process = try ProcessRunner.start(ProcessRunner.executable(handler), environment: variables)
        } catch {
            table.add(name, "warm \(handler) invocation", error.description)
            return
        }
        // Drain its output on a thread so a full pipe can never stall it.
        BackgroundThread.detach { _ = process.finish() }
        defer { process.kill(SIGKILL) }

        let warmUp = 50, measured = 1_000
        var samples: [Double] = []
        samples.reserveCapacity(measured)
        for index in 0..<(warmUp + measured) {
            let event = JSONValue.object(["refreshToken": refreshToken]).serializedBytes()
            peer.waitForNextRequests(index + 1, timeout: 10)
            let started = monotonicSeconds()
            peer.enqueue(RuntimeAPIPeer.Event(requestID: "bench-\(index)", body: event))
            let posts = peer.waitForPosts(index + 1, timeout: 10)
            guard posts.count == index + 1 else {
                table.add(name, "warm \(handler) invocation", "stalled after \(index) invocations")
                return
            }
            if index >= warmUp { samples.append((posts[index].receivedAt - started) * 1000) }
            guard let next = posts[index].json?["tokens"]?["refreshToken"] else {
                table.add(name, "warm \(handler) invocation", "refresh failed: \(String(decoding: posts[index].body.prefix(200), as: UTF8.self))")
                return
            }
            refreshToken = next
        }
        table.add(name, "warm \(handler) invocation, median of \(measured)", format(percentile(samples, 0.5), decimals: 3) + " ms",
                  target: "< 3 ms")
        table.add(name, "warm \(handler) invocation, p99 of \(measured)", format(percentile(samples, 0.99), decimals: 3) + " ms")
    }

    /// From spawning the process to its first `/next` request: loading, configuration, handler.
    static func coldStart(_ table: inout BenchTable) {
        var samples: [Double] = []
        for _ in 0..<20 {
            guard let peer = try? RuntimeAPIPeer() else { break }
            let store = TestSupport.temporaryDirectory("lambda-auth-bench")
            let started = monotonicSeconds()
            guard let process = try? ProcessRunner.start(ProcessRunner.executable(handler), environment: environment(peer, store: store)) else {
                peer.stop()
                TestSupport.removeTree(store)
                break
            }
            BackgroundThread.detach { _ = process.finish() }
            if peer.waitForNextRequests(1, timeout: 10), let first = peer.nextRequestTimes.first {
                samples.append((first - started) * 1000)
            }
            process.kill(SIGKILL)
            peer.stop()
            TestSupport.removeTree(store)
        }
        guard !samples.isEmpty else {
            table.add("runtime", "cold start to first /next", "the runtime never asked for an event")
            return
        }
        table.add("runtime", "cold start to first /next, median of \(samples.count)", format(percentile(samples, 0.5)) + " ms",
                  target: "< 20 ms")
        table.add("runtime", "cold start to first /next, worst of \(samples.count)", format(samples.max() ?? .nan) + " ms")
    }

    static func zipSizes(_ table: inout BenchTable) {
        for handler in HandlerNames.all {
            let path = "dist/\(handler).zip"
            var info = stat()
            guard stat(path, &info) == 0 else {
                table.add("runtime", "\(path) size", "dist/ absent: run make package", target: "< 25 MB")
                continue
            }
            table.add("runtime", "\(path) size", format(Double(info.st_size) / 1_000_000) + " MB", target: "< 25 MB")
        }
    }
}

