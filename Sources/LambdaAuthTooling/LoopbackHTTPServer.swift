import LambdaAuth
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 for tests and the dev identity provider: a JWKS endpoint,
/// a Lambda Runtime API peer, a faulty AWS endpoint, Apple's token endpoints. The owner decides
/// every response through `responder` and can read what was received. One thread per connection; keep-alive supported; stops when `stop()` is called.
public final class LoopbackHTTPServer: Sendable {
    public struct Request: Sendable {
        public var method: String
        /// Path with query string, as sent.
        public var target: String
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: [UInt8]

        public var path: String { String(target.prefix { $0 != "?" }) }
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]
        /// Close the connection without answering (a reset as far as the client can tell).
        public var dropConnection: Bool
        /// Wait this long before answering (timeouts, blocking `/next`).
        public var delaySeconds: Double
        /// Sent as they are instead of a response built from the fields above, one `send` each
        /// and `segmentGapSeconds` apart; the connection is closed afterwards. For clients' parsers:
        /// a response split anywhere, malformed, or cut short.
        public var rawSegments: [[UInt8]]?
        public var segmentGapSeconds: Double = 0

        public init(status: Int = 200, headers: [(String, String)] = [], body: [UInt8] = [],
                    dropConnection: Bool = false, delaySeconds: Double = 0) {
            self.status = status
            self.headers = headers
            self.body = body
            self.dropConnection = dropConnection
            self.delaySeconds = delaySeconds
        }

        public init(status: Int = 200, headers: [(String, String)] = [], text: String) {
            self.init(status: status, headers: headers, body: Array(text.utf8))
        }

        public static func json(_ value: JSONValue, status: Int = 200, headers: [(String, String)] = []) -> Response {
            Response(status: status, headers: [("Content-Type", "application/json")] + headers, body: value.serializedBytes())
        }

        public static let drop = Response(status: 0, dropConnection: true)

        /// `bytes` as they are, in segments of `segmentBytes`.
        public static func raw(_ bytes: [UInt8], segmentBytes: Int = .max, gapSeconds: Double = 0) -> Response {
            var response = Response(status: 0)
            response.rawSegments = stride(from: 0, to: bytes.count, by: max(1, min(segmentBytes, bytes.count))).map {
                Array(bytes[$0..<min(bytes.count, $0 + segmentBytes)])
            }
            response.segmentGapSeconds = gapSeconds
            return response
        }

        public static func raw(_ text: String, segmentBytes: Int = .max, gapSeconds: Double = 0) -> Response {
            raw(Array(text.utf8), segmentBytes: segmentBytes, gapSeconds: gapSeconds)
        }
    }

    public typealias Responder = @Sendable (Request) -> Response

    public let port: UInt16
    private let listener: Int32
    private struct State {
        var responder: Responder
        var received: [Request] = []
        var stopped = false
        var listenerClosed = false
        var connections: Set<Int32> = []
        var accepted = 0
    }

    private let state: Mutex<State>

    /// Starts listening on 127.0.0.1 with a port chosen by the system.
    public init(responder: @escaping Responder) throws {
        state = Mutex(State(responder: responder))
        let listening: (descriptor: Int32, port: UInt16)
        do {
            listening = try TCPListener.listen(on: in_addr(s_addr: inet_addr("127.0.0.1")), port: 0)
        } catch {
            throw FileSystem.Failure(path: "127.0.0.1", operation: error.operation, errno: error.errno)
        }
        listener = listening.descriptor
        port = listening.port
        BackgroundThread.detach { [self] in acceptLoop() }
    }

    deinit { stop() }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Answers each request with the next response of `script`, then with `otherwise`: a peer
    /// that fails a few times and then recovers.
    public static func scripted(_ script: [Response], otherwise: Response) throws -> LoopbackHTTPServer {
        let state = ScriptState(script)
        return try LoopbackHTTPServer { _ in state.next() ?? otherwise }
    }

    /// Replaces how the server answers from now on.
    public func respond(with responder: @escaping Responder) {
        state.withLock { $0.responder = responder }
    }

    /// Every request received so far, in order.
    public var requests: [Request] { state.withLock { $0.received } }
    public var requestCount: Int { state.withLock { $0.received.count } }
    /// Connections accepted so far (keep-alive reuses one).
    public var connectionCount: Int { state.withLock { $0.accepted } }

    /// Descriptors are shut down and closed only under the lock, and each exactly once: a number
    /// closed here can be reused at once by another test's socket, which must never be touched.
    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            // shutdown wakes the blocked accept(); the accept loop closes the listener itself.
            if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            for connection in state.connections { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        defer {
            state.withLock { state in
                state.listenerClosed = true
                close(listener)
            }
        }
        TCPListener.acceptConnections(listener, retrying: { $0 == EINTR }, take: { connection in
            let accepted: Bool = state.withLock { state in
                if state.stopped { return false }
                state.connections.insert(connection)
                state.accepted += 1
                return true
            }
            guard accepted else {
                close(connection)
                return false
            }
            BackgroundThread.detach { [self] in serve(connection) }
            return true
        })
    }

    private func serve(_ connection: Int32) {
        defer {
            state.withLock { state in
                _ = state.connections.remove(connection)
                close(connection)
            }
        }
        var reader = HTTPRequestReader(connection: connection, limits: .unlimited)
        while true {
            let request: Request
            switch reader.next() {
            case .closed:
                return
            case .refused(let status, let message):
                let head = "HTTP/1.1 \(status) \(ServeListener.reasonPhrase(status))\r\nContent-Length: \(message.utf8.count)\r\nConnection: close\r\n\r\n"
                _ = SocketIO.sendAll(connection, Array((head + message).utf8))
                return
            case .request(let head, let body):
                var headers: [String: String] = [:]
                for (name, value) in head.headers { headers[name.lowercased()] = value }
                request = Request(method: head.method, target: head.target, headers: headers, body: body)
            }
            let responder = state.withLock { state -> Responder in
                state.received.append(request)
                return state.responder
            }
            let response = responder(request)
            if response.delaySeconds > 0 { usleep(UInt32(response.delaySeconds * 1_000_000)) }
            if response.dropConnection {
                var linger = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
                return
            }
            if let segments = response.rawSegments {
                // Each segment its own TCP segment as far as the sender can make it.
                var one: Int32 = 1
                setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                for (index, segment) in segments.enumerated() {
                    if index > 0 && response.segmentGapSeconds > 0 { usleep(UInt32(response.segmentGapSeconds * 1_000_000)) }
                    guard SocketIO.sendAll(connection, segment) else { return }
                }
                return
            }
            var head = "HTTP/1.1 \(response.status) \(ServeListener.reasonPhrase(response.status))\r\n"
            for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
            head += "Content-Length: \(response.body.count)\r\n\r\n"
            guard SocketIO.sendAll(connection, Array(head.utf8) + response.body) else { return }
            if request.headers["connection"]?.lowercased() == "close" { return }
        }
    }
}

extension String {
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while slice.first == " " || slice.first == "\t" { slice = slice.dropFirst() }
        while slice.last == " " || slice.last == "\t" || slice.last == "\r" { slice = slice.dropLast() }
        return String(slice)
    }
}

/// Hands out a fixed sequence of responses to concurrent server threads.
final class ScriptState: Sendable {
    private let remaining: Mutex<[LoopbackHTTPServer.Response]>

    init(_ script: [LoopbackHTTPServer.Response]) { remaining = Mutex(script) }

    func next() -> LoopbackHTTPServer.Response? {
        remaining.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}
