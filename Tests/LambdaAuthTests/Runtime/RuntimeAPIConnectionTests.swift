import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The Runtime API client over its own socket, against loopback peers that answer exactly the
/// bytes a test chooses.
@Suite struct RuntimeAPIConnectionTests {
    static let invocationHead = "HTTP/1.1 200 OK\r\nLambda-Runtime-Aws-Request-Id: req-1\r\n"
        + "Lambda-Runtime-Deadline-Ms: 1700000000123\r\nLambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:1:function:f\r\n"
        + "Lambda-Runtime-Trace-Id: Root=1-2-3;Sampled=1\r\n"

    static func client(_ server: LoopbackHTTPServer, slept: SleepRecorder = SleepRecorder(),
                       retryDelays: [Double] = [0.01, 0.02]) -> RuntimeAPIClient {
        RuntimeAPIClient(address: "127.0.0.1:\(server.port)", retryDelays: retryDelays, sleep: { slept.record($0) })
    }

    static func checkInvocation(_ invocation: RuntimeAPIClient.Invocation, event: String) {
        #expect(invocation.requestID == "req-1")
        #expect(invocation.deadlineMilliseconds == 1_700_000_000_123)
        #expect(invocation.invokedFunctionARN == "arn:aws:lambda:us-east-1:1:function:f")
        #expect(invocation.traceID == "Root=1-2-3;Sampled=1")
        #expect(invocation.event == Array(event.utf8))
    }

    @Test(arguments: [false, true])
    func aResponseSplitIntoOneByteSegmentsIsReadWhole(chunked: Bool) throws {
        let event = #"{"refreshToken":"split-across-segments"}"#
        let framing = chunked
            ? "Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\n\(event.prefix(5))\r\n\(String(event.count - 5, radix: 16))\r\n\(event.dropFirst(5))\r\n0\r\nX-Trailer: 1\r\n\r\n"
            : "Content-Length: \(event.utf8.count)\r\n\r\n\(event)"
        let server = try LoopbackHTTPServer { _ in .raw(RuntimeAPIConnectionTests.invocationHead + framing, segmentBytes: 1, gapSeconds: 0.0005) }
        defer { server.stop() }
        let slept = SleepRecorder()
        let client = RuntimeAPIConnectionTests.client(server, slept: slept)
        RuntimeAPIConnectionTests.checkInvocation(try client.next(), event: event)
        // The peer closed after its answer: the kept connection is found dead and replaced at
        // once, with no backoff.
        RuntimeAPIConnectionTests.checkInvocation(try client.next(), event: event)
        #expect(slept.delays.isEmpty)
        #expect(server.connectionCount == 2)
        #expect(server.requests.map(\.target) == Array(repeating: "/2018-06-01/runtime/invocation/next", count: 2))
    }

    @Test func aHeaderLineUpToTheLimitIsRead() throws {
        let value = String(repeating: "a", count: 8 * 1024 - "X-Long: ".count)
        let server = try LoopbackHTTPServer { _ in .raw(RuntimeAPIConnectionTests.invocationHead + "X-Long: \(value)\r\nContent-Length: 2\r\n\r\n{}") }
        defer { server.stop() }
        RuntimeAPIConnectionTests.checkInvocation(try RuntimeAPIConnectionTests.client(server).next(), event: "{}")
    }

    @Test func aHeaderLineOverTheLimitIsRefusedAfterTheBoundedRetries() throws {
        let value = String(repeating: "a", count: 8 * 1024 + 1 - "X-Long: ".count)
        let server = try LoopbackHTTPServer { _ in .raw(RuntimeAPIConnectionTests.invocationHead + "X-Long: \(value)\r\nContent-Length: 2\r\n\r\n{}") }
        defer { server.stop() }
        let slept = SleepRecorder()
        let failure = try #require(throws: RuntimeAPIClient.Failure.self) { try RuntimeAPIConnectionTests.client(server, slept: slept).next() }
        #expect(failure.description.contains("over 8192 bytes"), "\(failure)")
        #expect(slept.delays == [0.01, 0.02])
        #expect(server.requestCount == 3)
    }

    @Test func aPeerClosingMidBodyIsRetriedOnAFreshConnection() throws {
        let event = #"{"refreshToken":"whole"}"#
        let cut = LoopbackHTTPServer.Response.raw(RuntimeAPIConnectionTests.invocationHead + "Content-Length: 100\r\n\r\n{\"refresh")
        let whole = LoopbackHTTPServer.Response(status: 200, headers: [
            ("Lambda-Runtime-Aws-Request-Id", "req-1"), ("Lambda-Runtime-Deadline-Ms", "1700000000123"),
            ("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:1:function:f"), ("Lambda-Runtime-Trace-Id", "Root=1-2-3;Sampled=1"),
        ], text: event)
        let server = try LoopbackHTTPServer.scripted([cut], otherwise: whole)
        defer { server.stop() }
        let slept = SleepRecorder()
        RuntimeAPIConnectionTests.checkInvocation(try RuntimeAPIConnectionTests.client(server, slept: slept).next(), event: event)
        #expect(slept.delays == [0.01])
        #expect(server.connectionCount == 2)
    }

    @Test func aPeerThatAlwaysClosesMidBodyIsUnreachableInTheEnd() throws {
        let server = try LoopbackHTTPServer { _ in .raw(RuntimeAPIConnectionTests.invocationHead + "Content-Length: 100\r\n\r\n{\"refresh") }
        defer { server.stop() }
        let failure = try #require(throws: RuntimeAPIClient.Failure.self) { try RuntimeAPIConnectionTests.client(server).next() }
        guard case .unreachable(let reason) = failure else {
            Issue.record("\(failure)")
            return
        }
        #expect(reason.contains("mid-body (9 of 100 bytes)") && reason.contains("after 3 attempts"), "\(reason)")
    }

    /// What a strict reader refuses: each one a well-formed invocation but for one flaw.
    static let malformed: [(String, String)] = [
        ("bare LF", "HTTP/1.1 200 OK\nLambda-Runtime-Aws-Request-Id: req-1\r\nContent-Length: 2\r\n\r\n{}"),
        ("folded header", RuntimeAPIConnectionTests.invocationHead + "X-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\n{}"),
        ("both framings", RuntimeAPIConnectionTests.invocationHead + "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
        ("conflicting lengths", RuntimeAPIConnectionTests.invocationHead + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"),
        ("signed length", RuntimeAPIConnectionTests.invocationHead + "Content-Length: +2\r\n\r\n{}"),
        ("other coding", RuntimeAPIConnectionTests.invocationHead + "Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
        ("control character", RuntimeAPIConnectionTests.invocationHead + "X-Bad: a\u{1}b\r\nContent-Length: 2\r\n\r\n{}"),
        ("not HTTP", "SSH-2.0-OpenSSH_9.6\r\n\r\n"),
        ("bad chunk size", RuntimeAPIConnectionTests.invocationHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
        ("too many headers", RuntimeAPIConnectionTests.invocationHead + String(repeating: "X-A: 1\r\n", count: 61) + "Content-Length: 2\r\n\r\n{}"),
    ]

    @Test(arguments: 0..<RuntimeAPIConnectionTests.malformed.count)
    func aMalformedResponseIsRefused(_ index: Int) throws {
        let (flaw, response) = RuntimeAPIConnectionTests.malformed[index]
        let server = try LoopbackHTTPServer { _ in .raw(response) }
        defer { server.stop() }
        let failure = try #require(throws: RuntimeAPIClient.Failure.self, "\(flaw) was accepted") {
            try RuntimeAPIConnectionTests.client(server, retryDelays: []).next()
        }
        #expect(failure.description.contains("malformed response"), "\(flaw): \(failure)")
    }

    @Test func aDeadlineThatIsNotANumberIsUnusable() throws {
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPServer.Response(status: 200, headers: [("Lambda-Runtime-Aws-Request-Id", "req-1"), ("Lambda-Runtime-Deadline-Ms", "-5")], text: "{}")
        }
        defer { server.stop() }
        let failure = try #require(throws: RuntimeAPIClient.Failure.self) { try RuntimeAPIConnectionTests.client(server).next() }
        guard case .unusable = failure else {
            Issue.record("\(failure)")
            return
        }
    }

    @Test func nextLongPollsForSeveralSecondsWithoutATimeout() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let client = RuntimeAPIClient(address: peer.address)
        BackgroundThread.detach {
            sleep(4)
            peer.enqueue(RuntimeAPIPeer.Event(requestID: "late", body: Array("{}".utf8)))
        }
        let started = monotonicSeconds()
        let invocation = try client.next()
        #expect(invocation.requestID == "late")
        #expect(monotonicSeconds() - started >= 3.9)
        #expect(try client.respond(requestID: "late", body: Array("{}".utf8)) == 202)
    }

    @Test func aSixMegabyteEventIsReadWholeAndAnythingOverTheLimitRefused() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let random = SeededRandomSource(seed: 6)
        let event = random.bytes(6 * 1024 * 1024)
        peer.enqueue(RuntimeAPIPeer.Event(requestID: "big", body: event))
        let client = RuntimeAPIClient(address: peer.address, retryDelays: [])
        let invocation = try client.next()
        #expect(invocation.event.count == event.count)
        #expect(invocation.event == event)
        // A response as large as Lambda allows goes out whole too.
        let response = random.bytes(RuntimeAPIClient.maximumResponseBytes)
        #expect(try client.respond(requestID: "big", body: response) == 202)
        #expect(peer.posts.first?.body == response)

        peer.enqueue(RuntimeAPIPeer.Event(requestID: "too-big", body: [UInt8](repeating: 0x20, count: 6 * 1024 * 1024 + 64 * 1024 + 1)))
        let failure = try #require(throws: RuntimeAPIClient.Failure.self) { try client.next() }
        #expect(failure.description.contains("larger than"), "\(failure)")
    }

    @Test func oneConnectionServesAWholeSequenceOfInvocations() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let client = RuntimeAPIClient(address: peer.address, retryDelays: [])
        for index in 0..<20 {
            peer.enqueue(RuntimeAPIPeer.Event(requestID: "seq-\(index)", body: Array(#"{"n":\#(index)}"#.utf8)))
            let invocation = try client.next()
            #expect(try client.respond(requestID: invocation.requestID, body: invocation.event) == 202)
        }
        #expect(peer.posts.map(\.requestID) == (0..<20).map { "seq-\($0)" })
        #expect(peer.connectionCount == 1)
    }

    /// The point of the socket client: a handler asks for its first event with no HTTP library
    /// mapped (libcurl comes with the first HTTPS call, if any).
    @Test(arguments: HandlerNames.all)
    func noHTTPLibraryIsLoadedBeforeTheFirstEvent(_ handler: String) throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let store = TestSupport.temporaryDirectory()
        defer { TestSupport.removeTree(store) }
        let running = try ProcessRunner.start(ProcessRunner.executable(handler),
                                              environment: ["AWS_LAMBDA_RUNTIME_API": peer.address, "AUTH_STORE": store])
        let process = BackgroundProcess(running)
        defer { process.kill(SIGKILL) }
        try #require(peer.waitForNextRequests(1, timeout: 20), "\(handler) never asked for an event")
        let maps = try FileSystem.readFile("/proc/\(running.pid)/maps", limit: 16 << 20)
        let libraries = Set(String(decoding: maps, as: UTF8.self).split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.flatMap { $0.contains(".so") ? String($0) : nil }
        })
        #expect(!libraries.contains { $0.contains("libcurl") || $0.contains("libssl") || $0.contains("libnghttp") }, "\(libraries.sorted())")
    }
}
