@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTooling
import LambdaAuthTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Drives real handler processes through the Lambda Runtime API loop, with a loopback peer in
/// place of Lambda.
@Suite struct RuntimeLoopTests {
    /// What a posted answer must be. Codes that depend on the flows (which are being written) are
    /// checked for shape only; exact codes only where the answer cannot depend on them.
    enum Expected {
        case contractError(http: Bool, code: ErrorCode?)
        case unexpectedFailure
    }

    struct Case {
        var event: String
        var expected: Expected
    }

    static func mixedCase(_ index: Int) -> Case {
        let token = "unknown-refresh-token-\(index)"
        let body = #"{\"refreshToken\":\"\#(token)\"}"#
        switch index % 10 {
        case 0: return Case(event: #"{"refreshToken":"\#(token)"}"#, expected: .contractError(http: false, code: nil))
        case 1: return Case(event: #"{"version":"2.0","requestContext":{"http":{"method":"POST"}},"headers":{"Content-Type":"application/json"},"body":"\#(body)","isBase64Encoded":false}"#,
                            expected: .contractError(http: true, code: nil))
        case 2: return Case(event: #"{"httpMethod":"POST","requestContext":{},"body":"\#(body)"}"#, expected: .contractError(http: true, code: nil))
        case 3: return Case(event: "{not json", expected: .contractError(http: false, code: .invalidRequest))
        case 4: return Case(event: "[1,2]", expected: .contractError(http: false, code: .invalidRequest))
        case 5: return Case(event: #"{"version":"2.0","requestContext":{"http":{"method":"POST"}},"body":"{broken"}"#,
                            expected: .contractError(http: true, code: .invalidRequest))
        case 6: return Case(event: #"{"httpMethod":"POST","requestContext":{},"body":42}"#, expected: .contractError(http: true, code: .invalidRequest))
        case 7: return Case(event: #"{"refreshToken":42}"#, expected: .contractError(http: false, code: nil))
        case 8: return Case(event: #"{"a":1,"a":2}"#, expected: .contractError(http: false, code: .invalidRequest))
        default: return Case(event: #"{"_testFault":"throw","refreshToken":"x"}"#, expected: .unexpectedFailure)
        }
    }

    @Test func fiftyMixedInvocationsInOneResidentProcess() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let store = TestSupport.temporaryDirectory()
        defer { TestSupport.removeTree(store) }
        let process = try BackgroundProcess(ProcessRunner.start(ProcessRunner.executable("refresh"), environment: [
            "AWS_LAMBDA_RUNTIME_API": peer.address, "AUTH_TEST_MODE": "1", "AUTH_STORE": store, "AUTH_LOG_LEVEL": "debug",
        ]))
        let cases = (0..<50).map(RuntimeLoopTests.mixedCase)
        var traceIDs: [String: String] = [:]
        for (index, testCase) in cases.enumerated() {
            let requestID = "req-\(index)-\(SystemRandomSource().identifier(bits: 32))"
            traceIDs[requestID] = "Root=1-5759e988-\(index);Sampled=1"
            peer.enqueue(RuntimeAPIPeer.Event(requestID: requestID, body: Array(testCase.event.utf8), traceID: traceIDs[requestID]))
        }
        let posts = peer.waitForPosts(50, timeout: 60)
        try #require(posts.count == 50, "only \(posts.count) answers posted")

        // Served in order, one answer per event, each checked against what its event must get.
        let requestIDs = posts.compactMap(\.requestID)
        #expect(Set(requestIDs).count == 50)
        for (post, testCase) in zip(posts, cases) {
            check(post, testCase)
        }

        // Still resident: it asked for a 51st event and is blocked there, not exited.
        #expect(peer.waitForNextRequests(51, timeout: 10))
        usleep(200_000)
        #expect(process.output == nil, "the runtime exited after its invocations")
        process.kill(SIGTERM)
        let output = try #require(process.wait(timeout: 10))
        #expect(output.signal == SIGTERM, "the process ended by itself instead of by our signal")

        // Every log line of an invocation carries that invocation's Lambda request id and its
        // trace id (not only the event line: a trace finds all of them).
        let lines = output.stderrText.split(separator: "\n").map { try? JSONValue.parse(String($0)) }
        #expect(!lines.contains { $0 == nil }, "a log line is not JSON")
        let known = Set(requestIDs)
        var seen: Set<String> = []
        for case let entry? in lines where entry["message"] != "runtime loop started" {
            guard let requestID = entry["requestId"]?.stringValue, known.contains(requestID) else {
                Issue.record("log line without a known requestId: \(entry.serialized())")
                continue
            }
            seen.insert(requestID)
            #expect(entry["traceId"]?.stringValue == traceIDs[requestID], "\(entry.serialized())")
        }
        #expect(seen == known, "invocations without a log line: \(known.subtracting(seen).sorted())")
        #expect(!output.stderrText.contains("unknown-refresh-token"), "a refresh token reached the log")
    }

    /// The store's deferred checkpoint runs after each response, in both modes: once an
    /// invocation is answered (and, under the Runtime API, the next event asked for), the log is
    /// under the checkpoint threshold again. Without that maintenance forty rotations (about
    /// 120 KB of log) would grow it past the threshold, up to the writers' inline cap of four
    /// times the threshold.
    @Test(arguments: [true, false]) func aRefreshChainIsCheckpointedAfterItsResponses(throughRuntimeAPI: Bool) throws {
        let world = FlowWorld()
        let signedIn = world.signIn(token: world.googleToken(subject: "maintenance-user"))
        var token = try #require(signedIn["tokens"]?["refreshToken"])
        let threshold = LocalTable.checkpointThreshold
        func walSize() -> Int { logLength(ofStoreAt: world.storeDirectory) }
        var sizes: [Int] = []
        if throughRuntimeAPI {
            let peer = try RuntimeAPIPeer()
            defer { peer.stop() }
            var environment = world.environment
            environment["AWS_LAMBDA_RUNTIME_API"] = peer.address
            let process = BackgroundProcess(try ProcessRunner.start(ProcessRunner.executable("refresh"), environment: environment))
            defer { process.kill(SIGKILL) }
            for index in 0..<40 {
                peer.enqueue(RuntimeAPIPeer.Event(requestID: "rotation-\(index)", body: JSONValue.object(["refreshToken": token]).serializedBytes()))
                let post = try #require(peer.waitForPost(index, timeout: 10), "rotation \(index) was not answered")
                token = try #require(post.json?["tokens"]?["refreshToken"], "rotation \(index): \(String(decoding: post.body, as: UTF8.self))")
                try #require(peer.waitForNextRequests(index + 2, timeout: 10), "no /next after rotation \(index)")
                sizes.append(walSize())
            }
        } else {
            for index in 0..<40 {
                let output = world.runProcess("refresh", ["refreshToken": token])
                token = try #require(output.json?["tokens"]?["refreshToken"], "rotation \(index): \(output.stdoutText) \(output.stderrText.suffix(300))")
                sizes.append(walSize())
            }
        }
        #expect(sizes.allSatisfy { $0 <= threshold }, "the log after each invocation: \(sizes)")
        #expect(zip(sizes, sizes.dropFirst()).contains { $1 < $0 }, "no checkpoint in 40 rotations: \(sizes)")
    }

    func check(_ post: RuntimeAPIPeer.Post, _ testCase: Case) {
        switch testCase.expected {
        case .unexpectedFailure:
            #expect(post.kind == .error, "\(testCase.event) was not reported as an error")
            #expect(post.errorType == "Function.Unhandled")
            #expect(post.json?["errorType"] == "Function.Unhandled")
            #expect(post.json?["errorMessage"]?.stringValue?.isEmpty == false)
            #expect(post.json?["stackTrace"] == .array([]))
        case .contractError(let http, let code):
            #expect(post.kind == .response, "\(testCase.event) got \(post.kind)")
            guard let document = post.json else {
                Issue.record("response to \(testCase.event) is not JSON")
                return
            }
            guard http else {
                RuntimeLoopTests.checkErrorBody(document, code: code, event: testCase.event)
                return
            }
            #expect(document["headers"]?["content-type"] == "application/json")
            #expect(document["isBase64Encoded"] == false)
            guard let bodyText = document["body"]?.stringValue, let body = try? JSONValue.parse(bodyText) else {
                Issue.record("HTTP response to \(testCase.event) has no JSON body")
                return
            }
            RuntimeLoopTests.checkErrorBody(body, code: code, event: testCase.event)
            #expect(document["statusCode"] != nil && document["statusCode"] == body["error"]?["status"])
        }
    }

    /// The contract's error body: a known code with its own status and retryability.
    static func checkErrorBody(_ body: JSONValue, code expected: ErrorCode?, event: String) {
        guard let error = body["error"], let codeText = error["code"]?.stringValue, let code = ErrorCode(rawValue: codeText) else {
            Issue.record("not the contract's error body for \(event): \(body.serialized())")
            return
        }
        if let expected { #expect(code == expected, "\(event) answered \(code)") }
        #expect(error["status"] == .number(code.status))
        #expect(error["retryable"] == .bool(code.isRetryable))
        #expect(error["message"]?.stringValue?.isEmpty == false)
    }

    @Test(arguments: [("AUTH_CLOCK_SKEW", "x"), ("AUTH_CREDENTIALS_SECRET", "short-secret-9f")])
    func invalidConfigurationPostsInitErrorAndExits(_ variable: String, _ value: String) throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let output = try ProcessRunner.run(ProcessRunner.executable("signin"),
                                           environment: ["AWS_LAMBDA_RUNTIME_API": peer.address, variable: value])
        #expect(output.exitCode != 0)
        #expect(output.signal == nil)
        let posts = peer.posts
        try #require(posts.count == 1)
        #expect(posts[0].kind == .initError)
        #expect(posts[0].errorType == "Runtime.ConfigError")
        #expect(posts[0].json?["errorType"] == "Runtime.ConfigError")
        #expect(posts[0].json?["stackTrace"] == .array([]))
        let message = try #require(posts[0].json?["errorMessage"]?.stringValue)
        #expect(message.contains(variable))
        #expect(!message.contains(value) && !output.stderrText.contains(value), "the value leaked")
        #expect(peer.nextRequestTimes.isEmpty, "asked for an event despite a failed init")
    }

    @Test func testFaultHookIsInertWithoutTestMode() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let process = try BackgroundProcess(ProcessRunner.start(ProcessRunner.executable("refresh"),
                                                                environment: ["AWS_LAMBDA_RUNTIME_API": peer.address]))
        peer.enqueue(RuntimeAPIPeer.Event(requestID: "fault-off", body: Array(#"{"_testFault":"throw"}"#.utf8)))
        let posts = peer.waitForPosts(1, timeout: 20)
        process.kill(SIGKILL)
        _ = process.wait(timeout: 10)
        try #require(posts.count == 1)
        #expect(posts[0].kind == .response)
        #expect(posts[0].json?["error"]?["code"] != nil)
    }

    @Test func testFaultInStdinModeIsAnInternalResponse() throws {
        let output = try ProcessRunner.run(ProcessRunner.executable("link-provider"), environment: ["AUTH_TEST_MODE": "1"],
                                           stdin: Array(#"{"_testFault":"throw"}"#.utf8))
        #expect(output.exitCode == 0)
        #expect(output.json?["error"]?["code"] == "INTERNAL")
        #expect(output.json?["error"]?["status"] == .number(500))
        #expect(output.stderrText.contains("_testFault hook"))
    }

    @Test func unreachableRuntimeAPIExitsNonZeroWithoutSpinning() throws {
        // A port bound by us but not listening: connections are refused.
        let socket = try BoundSocket()
        defer { socket.close() }
        let address = "127.0.0.1:\(socket.port)"
        let started = monotonicSeconds()
        let output = try ProcessRunner.run(ProcessRunner.executable("refresh"), environment: ["AWS_LAMBDA_RUNTIME_API": address])
        let elapsed = monotonicSeconds() - started
        #expect(output.exitCode != 0)
        #expect(output.signal == nil)
        #expect(elapsed < 10, "took \(elapsed) s to give up")
        #expect(output.stderrText.contains("unreachable"))
    }

    @Test func resetConnectionsAreRetriedABoundedNumberOfTimes() throws {
        let resetting = try LoopbackHTTPServer { _ in .drop }
        defer { resetting.stop() }
        let output = try ProcessRunner.run(ProcessRunner.executable("refresh"),
                                           environment: ["AWS_LAMBDA_RUNTIME_API": "127.0.0.1:\(resetting.port)"])
        #expect(output.exitCode != 0)
        #expect(resetting.requestCount == 1 + RuntimeAPIClient.defaultRetryDelays.count)
    }

    @Test func clientBacksOffWithItsDelaysThenGivesUp() throws {
        let resetting = try LoopbackHTTPServer { _ in .drop }
        defer { resetting.stop() }
        let slept = SleepRecorder()
        let client = RuntimeAPIClient(address: "127.0.0.1:\(resetting.port)",
                                      retryDelays: [0.01, 0.02, 0.03], sleep: { slept.record($0) })
        #expect(throws: RuntimeAPIClient.Failure.self) { try client.next() }
        #expect(slept.delays == [0.01, 0.02, 0.03])
        #expect(resetting.requestCount == 4)
    }

    @Test func clientReadsTheInvocationHeaders() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        peer.enqueue(RuntimeAPIPeer.Event(requestID: "abc-123", body: Array("{}".utf8), traceID: "Root=1-2-3",
                                          deadlineMilliseconds: 1_700_000_000_123))
        let client = RuntimeAPIClient(address: peer.address)
        let invocation = try client.next()
        #expect(invocation.requestID == "abc-123")
        #expect(invocation.traceID == "Root=1-2-3")
        #expect(invocation.deadlineMilliseconds == 1_700_000_000_123)
        #expect(invocation.invokedFunctionARN?.hasPrefix("arn:aws:lambda:") == true)
        #expect(invocation.event == Array("{}".utf8))
        #expect(try client.respond(requestID: invocation.requestID, body: Array("{}".utf8)) == 202)
        #expect(peer.posts.first?.requestID == "abc-123")
    }

    @Test func clientRefusesARequestIDThatIsNotAPathSegment() throws {
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPServer.Response(status: 200, headers: [("Lambda-Runtime-Aws-Request-Id", "../init/error")], text: "{}")
        }
        defer { server.stop() }
        let client = RuntimeAPIClient(address: "127.0.0.1:\(server.port)")
        #expect(throws: RuntimeAPIClient.Failure.self) { try client.next() }
    }
}

final class SleepRecorder: Sendable {
    private let recorded = Mutex<[Double]>([])
    func record(_ seconds: Double) { recorded.withLock { $0.append(seconds) } }
    var delays: [Double] { recorded.withLock { $0 } }
}

/// A running process whose output is collected on its own thread, so that a resident runtime's
/// logs never fill a pipe while the test drives it.
final class BackgroundProcess: Sendable {
    private let process: RunningProcess
    private let finished = Mutex<ProcessRunner.Output?>(nil)

    init(_ process: RunningProcess) {
        self.process = process
        BackgroundThread.detach { [self] in
            let output = process.finish()
            finished.withLock { $0 = output }
        }
    }

    var output: ProcessRunner.Output? { finished.withLock { $0 } }

    func kill(_ signal: Int32) { process.kill(signal) }

    func wait(timeout: Double) -> ProcessRunner.Output? {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if let output { return output }
            usleep(10_000)
        }
        return output
    }
}

/// A loopback port that refuses connections for as long as this holds it (bound, never listening).
struct BoundSocket {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw FileSystem.Failure(path: "127.0.0.1", operation: "bind", errno: errno) }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    func close() { _ = Glibc.close(descriptor) }
}
