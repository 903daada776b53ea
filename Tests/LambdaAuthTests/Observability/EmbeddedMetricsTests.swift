import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `AUTH_METRICS=emf` (contract section 18): one CloudWatch Embedded Metric Format line per
/// request, checked by the EMF specification's schema and AWS's `aws-embedded-metrics` validators
/// (Tests/Scripts/emf_check.py), counted against the requests of replayed scenarios by outcome,
/// on stdout under the Runtime API and on stderr in stdin mode.
@Suite struct EmbeddedMetricsTests {
    static let scenarios = ["refresh-rotation-grace-reuse.json", "session-eviction.json", "email-code-attempts-and-expiry.json",
                            "guest-identity-taken.json", "token-expiry.json"]

    /// Each step's handler and outcome, as the scenario expects them.
    static func expectedRequests(_ paths: [String]) throws -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for path in paths {
            let scenario = try JSONValue.parse(try FileSystem.readFile(path))
            for step in scenario["steps"]?.arrayValue ?? [] {
                let handler = try #require(step["handler"]?.stringValue)
                let status = try #require(step["expect"]?["status"]?.int64Value)
                let outcome = status < 300 ? "ok" : try #require(step["expect"]?["error"]?.stringValue, "\(path): a failing step names its code")
                counts["\(handler) \(outcome)", default: 0] += 1
            }
        }
        return counts
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aReplayedScenariosMetricsCountItsRequestsByOutcome(backend: FlowWorld.Backend) throws {
        let directory = TestSupport.temporaryDirectory("emf")
        defer { TestSupport.removeTree(directory) }
        let paths = Self.scenarios.map { TestSupport.packageRoot + "/Events/scenarios/" + $0 }
        var arguments = ["replay", "--metrics-out", directory + "/emf.txt"]
        var environment: [String: String] = [:]
        if backend == .dynamoDB {
            arguments += ["--backend", "dynamodb", "--endpoint", try MotoServer.shared().endpoint]
            environment = ["AWS_REGION": MotoServer.region, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"]
        }
        let replay = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments + paths, environment: environment)
        try #require(replay.exitCode == 0, "\(replay.stdoutText.suffix(2000)) \(replay.stderrText.suffix(1000))")
        let checked = try TestSupport.pythonPeer("emf_check.py", [directory + "/emf.txt"])
        #expect(checked["problems"] == [], "\(checked["problems"]?.serialized() ?? "")")
        #expect(checked["namespaces"] == ["lambda-auth"])
        let counted = (checked["requests"]?.objectValue ?? [:]).compactMapValues(\.int64Value)
        #expect(counted == (try Self.expectedRequests(paths)))
        #expect(checked["lines"]?.int64Value == counted.values.reduce(0, +))
    }

    @Test func underTheRuntimeAPITheMetricsGoToStdoutAndTheEventToStderr() throws {
        let world = FlowWorld(["AUTH_METRICS": "emf", "AUTH_METRICS_NAMESPACE": "my-app/auth"])
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let process = try ProcessRunner.start(ProcessRunner.executable("well-known"),
                                              environment: world.environment.merging(["AWS_LAMBDA_RUNTIME_API": peer.address]) { $1 })
        peer.enqueue(RuntimeAPIPeer.Event(requestID: "emf-1", body: Array(#"{"document":"jwks"}"#.utf8),
                                          traceID: "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"))
        peer.enqueue(RuntimeAPIPeer.Event(requestID: "emf-2", body: Array(#"{"document":"nothing"}"#.utf8)))
        let posts = peer.waitForPosts(2, timeout: 20)
        #expect(posts.count == 2)
        #expect(peer.waitForNextRequests(3, timeout: 10))
        process.kill(SIGKILL)
        let output = process.finish()
        let metrics = output.stdoutText.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }
        #expect(metrics.map { $0["outcome"] } == ["ok", "NOT_FOUND"], "\(output.stdoutText)")
        #expect(metrics.allSatisfy { $0["handler"] == "well-known" && $0["_aws"]?["CloudWatchMetrics"]?.arrayValue?.first?["Namespace"] == "my-app/auth" })
        let events = output.stderrText.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }.filter { $0["event"] != nil }
        #expect(events.map { $0["event"] } == ["well_known", "well_known_failed"])
        #expect(events.map { $0["requestId"] } == ["emf-1", "emf-2"])
        #expect(events.first?["traceId"] == "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
        #expect(events.last?["traceId"] == nil, "one invocation's trace id never leaks into the next")
        #expect(!output.stderrText.contains("\"_aws\""), "no metrics in the log under the Runtime API")
    }

    @Test func aLineHasTheSpecificationsShape() throws {
        let line = try JSONValue.parse(Array(EmbeddedMetrics.line(namespace: "lambda-auth", handler: "signin", outcome: "ok",
                                                                   milliseconds: 3.25, at: 1_800_000_000.5).utf8))
        #expect(line["_aws"]?["Timestamp"] == 1_800_000_000_500)
        #expect(line["_aws"]?["CloudWatchMetrics"]?.arrayValue?.first?["Dimensions"] == [["handler", "outcome"], ["outcome"]])
        #expect(line["handler"] == "signin" && line["outcome"] == "ok" && line["requests"] == 1 && line["duration"]?.doubleValue == 3.25)
    }

    @Test(arguments: [
        (["AUTH_METRICS": "cloudwatch"], "AUTH_METRICS must be off or emf"),
        (["AUTH_METRICS": "emf", "AUTH_METRICS_NAMESPACE": "AWS/Lambda"], "AUTH_METRICS_NAMESPACE must be"),
        (["AUTH_METRICS": "emf", "AUTH_METRICS_NAMESPACE": "bad|name"], "AUTH_METRICS_NAMESPACE must be"),
    ])
    func aBadMetricsSettingIsAConfigurationError(_ environment: [String: String], _ message: String) {
        let world = FlowWorld(environment)
        let output = world.run("well-known", ["document": "jwks"])
        #expect(output.errorCode == "CONFIG_ERROR")
        #expect(output.responseBody?["error"]?["message"]?.stringValue?.hasPrefix(message) == true, "\(output.stdoutText)")
    }
}
