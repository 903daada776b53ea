import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 15: how far each handler is from the floor of a process. The floor is a static C
/// program that exits at once, spawned in the same run (so the machine's own spawn cost is
/// measured beside ours, never assumed); against it, each shipped bootstrap's cold start (exec to
/// its first `/next`) and signin's whole-process invocation on a 200-user store; then every
/// handler's whole process and warm invocation (EveryHandlerBench).
enum FloorBench {
    static var section: BenchSection { BenchSection(name: "floor", run: run) }
    static let runs = 21

    static func run(_ table: inout BenchTable) {
        let work = try! FileSystem.makeTemporaryDirectory(prefix: "lambda-auth-floor-bench")
        defer { FileSystem.removeTree(work) }
        let floor = staticExitZero(in: work)
        if case .failure(let reason) = floor { table.add("floor", "static exit-0 process", reason.description) }
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        LargeStoreFixture.fill(directory: world.environment["AUTH_STORE"]!, users: 200)
        sync()  // the fill's files, written back now rather than under the measured syncs

        let executables = HandlerNames.all.map { ($0, shippedExecutable($0, work: work)) }
        let signin = executables.first { $0.0 == HandlerCatalogue.signin.name }!.1
        let floorMedian = wholeProcessSignIn(world, signin: signin, floor: try? floor.get(), &table)
        for (handler, executable) in executables {
            coldStart(handler, executable, world: world, &table)
        }
        EveryHandlerBench.run(world, executables: executables, floor: floorMedian, &table)
    }

    /// The binary that ships (the bootstrap of `dist/<handler>.zip`) when `make package` made
    /// one, else the built executable; the row says which.
    static func shippedExecutable(_ handler: String, work: String) -> (path: String, label: String) {
        let zip = "dist/\(handler).zip", directory = work + "/" + handler
        if FileSystem.exists(zip), (try? ProcessRunner.run("/usr/bin/unzip", arguments: ["-q", "-o", zip, "-d", directory]))?.exitCode == 0 {
            return (directory + "/bootstrap", "zipped bootstrap")
        }
        return (ProcessRunner.executable(handler), "unstripped build")
    }

    static func staticExitZero(in work: String) -> Result<String, BenchFailure> {
        let source = work + "/exit0.c", binary = work + "/exit0"
        do {
            try FileSystem.writeAtomically(source, Array("int main(void) { return 0; }\n".utf8))
            let output = try ProcessRunner.run("/usr/bin/env", arguments: ["gcc", "-static", "-O2", "-o", binary, source])
            guard output.exitCode == 0 else {
                return .failure(BenchFailure("gcc -static failed (is glibc's static library, libc6-dev, installed?): \(output.stderrText.suffix(200))"))
            }
        } catch {
            return .failure(BenchFailure("cannot build it: \(error)"))
        }
        return .success(binary)
    }

    static func spawnMedian(_ binary: String, runs: Int) -> Double {
        percentile((0..<runs).map { _ in
            let started = monotonicSeconds()
            _ = try? ProcessRunner.run(binary)
            return (monotonicSeconds() - started) * 1000
        }, 0.5)
    }

    /// Samples of the floor and of signin alternate, so that both see the same machine. Returns
    /// the floor's median.
    static func wholeProcessSignIn(_ world: FlowBench.World, signin: (path: String, label: String), floor: String?,
                                   _ table: inout BenchTable) -> Double? {
        let now = SystemClock().nowSeconds
        func event() -> JSONValue {
            ["provider": "google", "idToken": .string(world.token(.google, subject: "floor-user", email: "floor@example.com", now: now))]
        }
        // The user exists and the JWKS is in memory's reach (file://): a returning user's sign-in.
        _ = world.invoke("signin", event())
        var floors: [Double] = []
        let measured = EveryHandlerBench.wholeProcess(signin.path, environment: world.environment, event: { _ in event() }) {
            guard let floor else { return }
            let started = monotonicSeconds()
            _ = try? ProcessRunner.run(floor)
            floors.append((monotonicSeconds() - started) * 1000)
        }
        let signIns: [Double]
        switch measured {
        case .success(let samples): signIns = samples
        case .failure(let reason):
            table.add("floor", "signin whole process", reason.description)
            return nil
        }
        if !floors.isEmpty {
            table.add("floor", "static exit-0 process (gcc -static), median of \(runs)", format(percentile(floors, 0.5)) + " ms")
        }
        table.add("floor", "signin whole process, 200-user store (\(signin.label)), median of \(runs)",
                  format(percentile(signIns, 0.5)) + " ms", target: "<= 6 ms")
        if !floors.isEmpty {
            table.add("floor", "signin whole process minus exit-0 process (medians)",
                      format(percentile(signIns, 0.5) - percentile(floors, 0.5)) + " ms")
        }
        return floors.isEmpty ? nil : percentile(floors, 0.5)
    }

    /// From spawning the process to its first `/next`: loading, configuration, handler. Also the
    /// shared libraries mapped at that moment (libcurl must not be among them).
    static func coldStart(_ handler: String, _ executable: (path: String, label: String), world: FlowBench.World,
                          _ table: inout BenchTable) {
        guard let peer = try? RuntimeAPIPeer() else {
            table.add("floor", "\(handler) cold start", "no loopback peer could start")
            return
        }
        defer { peer.stop() }
        var environment = world.environment
        environment["AWS_LAMBDA_RUNTIME_API"] = peer.address
        var samples: [Double] = []
        var libraries: [String] = []
        for index in 0..<runs {
            let started = monotonicSeconds()
            guard let process = try? ProcessRunner.start(executable.path, environment: environment) else { break }
            BackgroundThread.detach { _ = process.finish() }
            if peer.waitForNextRequests(index + 1, timeout: 10) {
                samples.append((peer.nextRequestTimes[index] - started) * 1000)
                if index == 0 { libraries = mappedLibraries(process.pid) }
            }
            process.kill(SIGKILL)
            guard samples.count == index + 1 else { break }
        }
        guard samples.count == runs else {
            table.add("floor", "\(handler) cold start to first /next", "the runtime asked for an event \(samples.count) of \(runs) times")
            return
        }
        table.add("floor", "\(handler) cold start to first /next (\(executable.label)), median of \(runs)",
                  format(percentile(samples, 0.5)) + " ms", target: "<= 6 ms")
        table.add("floor", "\(handler) shared libraries mapped at first /next", "\(libraries.count): " + libraries.joined(separator: " "),
                  target: "no libcurl, libstdc++, libgcc_s")
    }

    /// File names of the shared objects in a process's address space.
    static func mappedLibraries(_ pid: pid_t) -> [String] {
        guard let maps = try? FileSystem.readFile("/proc/\(pid)/maps") else { return [] }
        let names = String(decoding: maps, as: UTF8.self).split(separator: "\n").compactMap { line -> String? in
            guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last, path.contains(".so") else { return nil }
            return path.split(separator: "/").last.map(String.init)
        }
        return Array(Set(names)).sorted()
    }
}

/// One resident handler process behind a loopback Runtime API peer.
enum ResidentHandler {
    /// Milliseconds from handing each event to the blocked `/next` until its answer is posted;
    /// every answer must be a success (no `error` member).
    static func measure(_ executable: String, environment: [String: String], warmUp: Int, count: Int,
                        event: (Int) -> JSONValue) -> Result<[Double], BenchFailure> {
        guard let peer = try? RuntimeAPIPeer() else { return .failure(BenchFailure("no loopback peer could start")) }
        defer { peer.stop() }
        var variables = environment
        variables["AWS_LAMBDA_RUNTIME_API"] = peer.address
        let process: RunningProcess
        do {
            process = try ProcessRunner.start(executable, environment: variables)
        } catch {
            return .failure(BenchFailure(error.description))
        }
        BackgroundThread.detach { _ = process.finish() }
        defer { process.kill(SIGKILL) }
        var samples: [Double] = []
        for index in 0..<(warmUp + count) {
            let body = event(index).serializedBytes()
            guard peer.waitForNextRequests(index + 1, timeout: 10) else { return .failure(BenchFailure("no /next after \(index) invocations")) }
            let started = monotonicSeconds()
            peer.enqueue(RuntimeAPIPeer.Event(requestID: "warm-\(index)", body: body))
            guard let post = peer.waitForPost(index, timeout: 10) else { return .failure(BenchFailure("stalled after \(index) invocations")) }
            guard post.kind == .response, let answer = post.json, answer["error"] == nil else {
                return .failure(BenchFailure("invocation \(index) failed: \(String(decoding: post.body.prefix(200), as: UTF8.self))"))
            }
            if index >= warmUp { samples.append((post.receivedAt - started) * 1000) }
        }
        return .success(samples)
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
