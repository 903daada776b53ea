import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// A Lambda Runtime API on loopback, for tests and the bench: hands out queued events on
/// `/invocation/next` (blocking while the queue is empty, as Lambda does), and records every
/// `/response`, `/error` and `/init/error` post.
// @unchecked: the state below is guarded by a pthread mutex paired with a condition variable
// (`/next` blocks until an event is queued), a wait Synchronization.Mutex cannot do.
public final class RuntimeAPIPeer: @unchecked Sendable {
    public struct Event: Sendable {
        public var requestID: String
        public var body: [UInt8]
        public var traceID: String?
        public var deadlineMilliseconds: Int64

        public init(requestID: String, body: [UInt8], traceID: String? = nil,
                    deadlineMilliseconds: Int64 = Int64((SystemClock().now() + 30) * 1000)) {
            self.requestID = requestID
            self.body = body
            self.traceID = traceID
            self.deadlineMilliseconds = deadlineMilliseconds
        }
    }

    public enum PostKind: String, Sendable { case response, error, initError }

    public struct Post: Sendable {
        public var kind: PostKind
        /// nil for `/init/error`.
        public var requestID: String?
        public var errorType: String?
        public var body: [UInt8]
        /// Monotonic seconds when the post arrived.
        public var receivedAt: Double

        public var json: JSONValue? { try? JSONValue.parse(body) }
    }

    private let server: LoopbackHTTPServer
    // Pointers, not stored structs: pthread objects must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue: [Event] = []
    private var recorded: [Post] = []
    private var nextRequests: [Double] = []
    private var stopped = false

    public init() throws {
        let box = WeakBox()
        server = try LoopbackHTTPServer { request in
            box.peer?.answer(request) ?? .drop
        }
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        box.peer = self
    }

    deinit {
        stop()
        // The server's threads may still be inside a responder: the pthread objects are leaked
        // on purpose rather than destroyed under them (a few bytes per test).
    }

    /// What `AWS_LAMBDA_RUNTIME_API` must be set to.
    public var address: String { "127.0.0.1:\(server.port)" }

    public func enqueue(_ event: Event) {
        locked {
            queue.append(event)
            pthread_cond_broadcast(condition)
        }
    }

    public var posts: [Post] { locked { recorded } }
    /// Connections the runtime opened (a kept-alive client opens one).
    public var connectionCount: Int { server.connectionCount }
    /// Monotonic times of every `/invocation/next` request received.
    public var nextRequestTimes: [Double] { locked { nextRequests } }

    /// Waits until at least `count` posts arrived or `timeout` seconds passed; returns them all.
    public func waitForPosts(_ count: Int, timeout: Double) -> [Post] {
        waitUntil(timeout: timeout) { recorded.count >= count }
        return posts
    }

    /// Waits for the post number `index` (counting from 0); nil if it has not come within
    /// `timeout`. Copies one post, not the whole record (the bench waits 10,000 times).
    public func waitForPost(_ index: Int, timeout: Double) -> Post? {
        waitUntil(timeout: timeout) { recorded.count > index }
        return locked { index < recorded.count ? recorded[index] : nil }
    }

    /// Waits until the runtime has asked for `count` events (it is idle at `/next` afterwards).
    @discardableResult
    public func waitForNextRequests(_ count: Int, timeout: Double) -> Bool {
        waitUntil(timeout: timeout) { nextRequests.count >= count }
    }

    public func stop() {
        let first: Bool = locked {
            defer { stopped = true }
            pthread_cond_broadcast(condition)
            return !stopped
        }
        if first { server.stop() }
    }

    @discardableResult
    private func waitUntil(timeout: Double, _ done: () -> Bool) -> Bool {
        let deadline = SystemClock().now() + timeout
        return locked {
            while !done() {
                let now = SystemClock().now()
                guard now < deadline, !stopped else { return false }
                var until = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - deadline.rounded(.down)) * 1e9))
                pthread_cond_timedwait(condition, mutex, &until)
            }
            return true
        }
    }

    private func answer(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
        let parts = request.path.split(separator: "/").map(String.init)
        // /2018-06-01/runtime/invocation/next | /invocation/{id}/response | /invocation/{id}/error | /init/error
        guard parts.count >= 3, parts[0] == "2018-06-01", parts[1] == "runtime" else { return notFound }
        let tail = Array(parts.dropFirst(2))
        if request.method == "GET", tail == ["invocation", "next"] {
            return nextEvent()
        }
        guard request.method == "POST" else { return notFound }
        let post: Post
        switch tail.count {
        case 2 where tail == ["init", "error"]:
            post = Post(kind: .initError, requestID: nil, errorType: request.headers["lambda-runtime-function-error-type"],
                        body: request.body, receivedAt: monotonicSeconds())
        case 3 where tail[0] == "invocation" && (tail[2] == "response" || tail[2] == "error"):
            post = Post(kind: tail[2] == "response" ? .response : .error, requestID: tail[1],
                        errorType: request.headers["lambda-runtime-function-error-type"], body: request.body,
                        receivedAt: monotonicSeconds())
        default:
            return notFound
        }
        locked {
            recorded.append(post)
            pthread_cond_broadcast(condition)
        }
        return .json(["status": "OK"], status: 202)
    }

    private var notFound: LoopbackHTTPServer.Response { .json(["errorMessage": "not found"], status: 404) }

    /// Blocks the connection while the queue is empty, as the real Runtime API does.
    private func nextEvent() -> LoopbackHTTPServer.Response {
        let event: Event? = locked {
            nextRequests.append(monotonicSeconds())
            pthread_cond_broadcast(condition)
            while queue.isEmpty && !stopped { pthread_cond_wait(condition, mutex) }
            return stopped ? nil : queue.removeFirst()
        }
        guard let event else { return .drop }
        var headers: [(String, String)] = [
            ("Lambda-Runtime-Aws-Request-Id", event.requestID),
            ("Lambda-Runtime-Deadline-Ms", String(event.deadlineMilliseconds)),
            ("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:test"),
        ]
        if let traceID = event.traceID { headers.append(("Lambda-Runtime-Trace-Id", traceID)) }
        return LoopbackHTTPServer.Response(status: 200, headers: headers, body: event.body)
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// The server's responder must not keep the peer alive (the peer owns the server).
    private final class WeakBox: @unchecked Sendable {
        weak var peer: RuntimeAPIPeer?
    }
}
