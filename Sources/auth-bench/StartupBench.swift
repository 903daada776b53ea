import Crypto
import LambdaAuth
import LambdaAuthTooling
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Issue 15: what a handler does before its first `/next`, step by step, each timed in a fresh
/// process (`auth-bench startup-probe`, the first call of each step, as a cold start pays it),
/// with a PEM signing key configured as a deployment has one.
enum StartupBench {
    static var section: BenchSection { BenchSection(name: "startup", run: run) }
    static let runs = 21
    static let steps = ["environment", "configuration", "logger", "table", "verifier", "signing key (PEM)", "services (after the above)", "runtime client"]

    static func run(_ table: inout BenchTable) {
        // The bench world's AUTH_SIGNING_KEYS (one ES256 key, as before RS256; setting
        // AUTH_SIGNING_KEY beside it would be two forms at once, a CONFIG_ERROR).
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        var samples: [String: [Double]] = [:]
        for _ in 0..<runs {
            guard let output = try? ProcessRunner.run(ProcessRunner.currentExecutable, arguments: ["startup-probe"], environment: world.environment),
                  let timings = output.json?.objectValue else {
                table.add("startup", "startup probe", "failed")
                return
            }
            for (step, value) in timings { if let number = value.doubleValue { samples[step, default: []].append(number) } }
        }
        for step in steps {
            table.add("startup", "\(step), first call, median of \(runs)", format(percentile(samples[step] ?? [], 0.5), decimals: 3) + " ms")
        }
    }

    /// The steps of RuntimeLoop.run and of every handler's factory (AuthServices), in their order.
    static func probe() -> Never {
        var timings: [String: JSONValue] = [:]
        func time<T>(_ step: String, _ body: () throws -> T) rethrows -> T {
            let started = monotonicSeconds()
            defer { timings[step] = .number(String((monotonicSeconds() - started) * 1000)) }
            return try body()
        }
        do {
            let environment = time("environment") { Environment.current() }
            let configuration = try time("configuration") { try AuthConfiguration.fromEnvironment(environment) }
            let logger = time("logger") { Logger.jsonLines(level: configuration.logLevel) }
            _ = try time("table") { try makeTable(configuration, clock: configuration.clock) }
            _ = time("verifier") {
                IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                                httpClient: CurlHTTPClient(), clock: configuration.clock, logger: logger)
            }
            // Also inside "configuration" (keys are parsed as the configuration is read): timed
            // alone here to show its share.
            if let pem = environment["AUTH_SIGNING_KEYS"] {
                _ = try time("signing key (PEM)") { try AccessTokenKeySet.parse(pem: pem, variable: "AUTH_SIGNING_KEYS") }
            }
            _ = try time("services (after the above)") { try AuthServices(configuration: configuration, logger: logger) }
            _ = time("runtime client") { RuntimeAPIClient(address: "127.0.0.1:9001") }
        } catch {
            writeStandardErrorLine("startup-probe: \(error)")
            exit(1)
        }
        HandlerMain.emit(.object(timings))
        exit(0)
    }
}
