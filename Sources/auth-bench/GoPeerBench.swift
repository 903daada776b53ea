import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 32: a returning user's Google sign-in beside the Go peer that does the same work
/// (`../shared/peers/go_signin`: verify the RS256 ID token against a JWKS file, find the user under
/// a lock in a store of small files with an append-only log and one fdatasync, keep the refresh
/// token's SHA-256, sign an ES256 access token, mint credentials). Built here with Debian's Go
/// (`prerequisites.sh test` installs golang-go), run on its `log` store, each with 200 users.
/// Whole processes alternate, ours then the peer's, so that both see the same machine; warm, ours
/// is a resident handler behind the Runtime API and the peer its resident loop (one event a line).
enum GoPeerBench {
    static var section: BenchSection { BenchSection(name: "go-peer", run: run) }
    static let warmUp = 20, warmRuns = 501, users = 200

    /// The peer's source folder: AUTH_BENCH_GO_PEER, else beside the checkout (as CI has it).
    static var sourceDirectory: String {
        Environment.current()["AUTH_BENCH_GO_PEER"].flatMap { $0.isEmpty ? nil : $0 } ?? "../shared/peers/go_signin"
    }

    static func run(_ table: inout BenchTable) {
        let work = try! FileSystem.makeTemporaryDirectory(prefix: "lambda-auth-go-peer")
        defer { FileSystem.removeTree(work) }
        let peer: String
        switch build(in: work) {
        case .success(let binary): peer = binary
        case .failure(let reason):
            table.add("go-peer", "Go peer", reason.description, target: "built and measured")
            return
        }
        let signin = FloorBench.shippedExecutable(HandlerCatalogue.signin.name, work: work)
        for algorithm in [JWSAlgorithm.es256, .rs256] {
            let world = FlowBench.makeWorld(["AUTH_SIGNING_KEYS": FlowBench.benchSigningKeys[algorithm]!])
            defer { FileSystem.removeTree(world.directory) }
            LargeStoreFixture.fill(directory: world.environment["AUTH_STORE"]!, users: users)
            let peerEnvironment = environment(of: world, work: work + "/" + algorithm.rawValue)
            let now = SystemClock().nowSeconds
            func event(_ subject: String) -> JSONValue {
                ["provider": "google", "idToken": .string(world.token(.google, subject: subject, email: "\(subject)@example.com", now: now))]
            }
            // The peer's 200 users, and the returning one on both sides.
            for index in 0..<users - 1 where exchange(peer, peerEnvironment, event("peer-fill-\(index)")) == nil {
                table.add("go-peer", "Go peer", "the peer refused a sign-in while its store was filled")
                return
            }
            _ = world.invoke("signin", event("returning-user"))
            guard exchange(peer, peerEnvironment, event("returning-user")) != nil else {
                table.add("go-peer", "Go peer", "the peer refused the returning user's first sign-in")
                return
            }
            sync()
            var peerSamples: [Double] = []
            var peerFailed = false
            let ours = EveryHandlerBench.wholeProcess(signin.path, environment: world.environment, event: { _ in event("returning-user") }) {
                let bytes = event("returning-user").serializedBytes()
                let started = monotonicSeconds()
                if exchange(peer, peerEnvironment, bytes: bytes) == nil { peerFailed = true }
                peerSamples.append((monotonicSeconds() - started) * 1000)
            }
            let label = algorithm == .es256 ? "ES256 (as the peer)" : "RS256 (the peer signs ES256)"
            switch ours {
            case .success(let samples) where !peerFailed:
                let (mine, theirs) = (percentile(samples, 0.5), percentile(peerSamples, 0.5))
                table.add("go-peer", "whole process, 200 users, ours \(signin.label), \(label), median of \(samples.count)", format(mine) + " ms")
                table.add("go-peer", "whole process, 200 users, Go peer (log store), median of \(peerSamples.count)", format(theirs) + " ms")
                table.add("go-peer", "whole process, ours / Go, \(label)", format(mine / theirs) + "x", target: "<= 0.8x")
            case .success:
                table.add("go-peer", "whole process, \(label)", "the Go peer failed a sign-in")
            case .failure(let reason):
                table.add("go-peer", "whole process, \(label)", reason.description)
            }
            warm(signin.path, world: world, peer: peer, peerEnvironment: peerEnvironment, label: label, event: event, &table)
        }
    }

    static func warm(_ signin: String, world: FlowBench.World, peer: String, peerEnvironment: [String: String], label: String,
                     event: (String) -> JSONValue, _ table: inout BenchTable) {
        let ours = ResidentHandler.measure(signin, environment: world.environment, warmUp: warmUp, count: warmRuns) { _ in event("returning-user") }
        var loop = peerEnvironment
        loop["GO_PEER_LOOP"] = "1"
        var peerSamples: [Double] = []
        if let process = try? ProcessRunner.start(peer, environment: loop) {
            for index in 0..<(warmUp + warmRuns) {
                let bytes = event("returning-user").serializedBytes()
                let started = monotonicSeconds()
                guard let answer = process.exchangeLine(bytes), (try? JSONValue.parse(answer))?["error"] == nil else { break }
                if index >= warmUp { peerSamples.append((monotonicSeconds() - started) * 1000) }
            }
            process.kill(SIGKILL)
            _ = process.finish()
        }
        guard case .success(let samples) = ours, peerSamples.count == warmRuns else {
            table.add("go-peer", "warm, \(label)", "ours: \(ours.map { "\($0.count) samples" }), the peer: \(peerSamples.count) of \(warmRuns)")
            return
        }
        func figures(_ values: [Double]) -> String {
            format(percentile(values, 0.5), decimals: 3) + " / " + format(percentile(values, 0.99), decimals: 3) + " ms"
        }
        table.add("go-peer", "warm, ours (Runtime API), \(label), median / p99 of \(samples.count)", figures(samples))
        table.add("go-peer", "warm, Go peer (resident loop), median / p99 of \(peerSamples.count)", figures(peerSamples))
        table.add("go-peer", "warm, ours / Go (medians), \(label)", format(percentile(samples, 0.5) / percentile(peerSamples, 0.5)) + "x",
                  target: "<= 0.8x")
    }

    /// `go build` as the peer's README says: static (no cgo), trimmed paths, no symbol tables.
    static func build(in work: String) -> Result<String, BenchFailure> {
        let source = sourceDirectory + "/main.go", binary = work + "/go_signin"
        guard FileSystem.exists(source) else {
            return .failure(BenchFailure("no peer source at \(source) (AUTH_BENCH_GO_PEER names another folder)"))
        }
        // PATH and HOME come along (ProcessRunner passes them on).
        let environment = ["CGO_ENABLED": "0", "GOCACHE": work + "/go-cache", "GOPATH": work + "/go-path", "GOFLAGS": "-mod=mod"]
        do {
            let output = try ProcessRunner.run("/usr/bin/env", arguments: ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, source],
                                               environment: environment)
            guard output.exitCode == 0 else {
                return .failure(BenchFailure("go build failed (is Debian's golang-go installed? prerequisites.sh test installs it): "
                                             + String(output.stderrText.suffix(300))))
            }
        } catch {
            return .failure(BenchFailure("cannot run go: \(error)"))
        }
        return .success(binary)
    }

    /// The peer's variables for the world's provider and signing key, its store in `directory`.
    static func environment(of world: FlowBench.World, work directory: String) -> [String: String] {
        try? FileSystem.createDirectory(directory + "/store")
        let keyFile = directory + "/signing-key.pem"
        try? FileSystem.writeAtomically(keyFile, Array(FlowBench.benchSigningKeys[.es256]!.utf8))
        return ["AUTH_GOOGLE_AUDIENCES": world.environment["AUTH_GOOGLE_AUDIENCES"]!,
                "AUTH_GOOGLE_JWKS_URL": world.environment["AUTH_GOOGLE_JWKS_URL"]!,
                "AUTH_STORE": directory + "/store", "PEER_SIGNING_KEY_FILE": keyFile, "GO_PEER_STORE": "log"]
    }

    /// One whole peer process for `event`; its answer, or nil when it failed.
    static func exchange(_ peer: String, _ environment: [String: String], _ event: JSONValue) -> JSONValue? {
        exchange(peer, environment, bytes: event.serializedBytes())
    }

    static func exchange(_ peer: String, _ environment: [String: String], bytes: [UInt8]) -> JSONValue? {
        guard let output = try? ProcessRunner.run(peer, environment: environment, stdin: bytes), output.exitCode == 0,
              let answer = output.json, answer["error"] == nil else { return nil }
        return answer
    }
}
