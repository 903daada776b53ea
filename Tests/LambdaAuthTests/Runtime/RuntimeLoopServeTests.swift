import LambdaAuth
import LambdaAuthTestSupport
import Logging
import Synchronization
import Testing

/// The loop's answer to each kind of handler outcome, in process, with handlers that today's
/// executables cannot produce (a 7 MB response, a lower layer's typed error).
@Suite struct RuntimeLoopServeTests {
    struct StoreDown: AuthErrorConvertible {
        var authError: AuthError { AuthError(.storeUnavailable, "the table cannot be reached") }
    }

    struct Bug: Error {}

    /// Behaves as the request's `mode` says.
    struct ScriptedHandler: RequestHandler {
        func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
            context.logger.info("handling", metadata: ["mode": request.body["mode"]?.stringValue.map { .string($0) } ?? .null])
            switch request.body["mode"]?.stringValue {
            case "huge": return InvocationResponse(body: ["blob": .string(String(repeating: "x", count: 7 << 20))])
            case "store": throw StoreDown()
            case "bug": throw Bug()
            default: return InvocationResponse(body: ["ok": true])
            }
        }
    }

    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [JSONValue] { lines.withLock { $0 }.compactMap { try? JSONValue.parse($0) } }
    }

    @Test func eachOutcomeIsPostedWhereLambdaExpectsItAndTheLoopGoesOn() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let lines = Lines()
        let client = RuntimeAPIClient(address: peer.address)
        let loop = RuntimeLoop(client: client, handler: ScriptedHandler(),
                               logger: Logger.jsonLines(sink: { lines.append($0) }))
        let modes = ["huge", "store", "bug", "fine"]
        for mode in modes {
            peer.enqueue(RuntimeAPIPeer.Event(requestID: "id-\(mode)", body: Array(#"{"mode":"\#(mode)"}"#.utf8)))
            try loop.serve(client.next())
        }
        let posts = peer.waitForPosts(4, timeout: 10)
        try #require(posts.count == 4)

        #expect(posts[0].kind == .error && posts[0].requestID == "id-huge")
        #expect(posts[0].errorType == "Function.ResponseSizeTooLarge")
        #expect(posts[0].body.count < 1024, "the oversized response was posted")

        #expect(posts[1].kind == .response && posts[1].requestID == "id-store")
        #expect(posts[1].json?["error"]?["code"] == "STORE_UNAVAILABLE")
        #expect(posts[1].json?["error"]?["retryable"] == true)

        #expect(posts[2].kind == .error && posts[2].requestID == "id-bug")
        #expect(posts[2].json?["errorType"] == "Function.Unhandled")
        #expect(posts[2].json?["errorMessage"]?.stringValue?.contains("Bug") == true)

        #expect(posts[3].kind == .response && posts[3].json == ["ok": true])

        let logged = lines.all
        #expect(logged.count >= 4)
        for entry in logged {
            #expect(entry["requestId"]?.stringValue.map { modes.map { "id-\($0)" }.contains($0) } == true,
                    "log line without its request id: \(entry.serialized())")
        }
    }

    @Test func aHandlerThatCannotBeBuiltIsAnInitError() throws {
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let status = RuntimeLoop.run(name: "test", address: peer.address, environment: ["AUTH_LOG_LEVEL": "error"]) { _, _ in
            throw AuthError(.configError, "AUTH_SIGNING_KEY is not a PEM P-256 private key")
        }
        #expect(status != 0)
        let posts = peer.posts
        try #require(posts.count == 1)
        #expect(posts[0].kind == .initError)
        #expect(posts[0].errorType == "Runtime.ConfigError")
        #expect(posts[0].json?["errorMessage"] == "AUTH_SIGNING_KEY is not a PEM P-256 private key")
        #expect(peer.nextRequestTimes.isEmpty)
    }
}
