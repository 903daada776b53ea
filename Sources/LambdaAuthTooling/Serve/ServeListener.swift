import LambdaAuth
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP/1.1 listener of `authctl serve`: a thread per connection (handlers are Sendable and
/// block on the store and on HTTP calls, so threads are the simple fit), keep-alive, bodies by
/// `Content-Length` (`HTTPRequestReader`, shared with the test server). Beside `LoopbackHTTPServer` rather than on it: serve needs a chosen host and
/// port, the peer address (the event's `sourceIp`), repeated headers (cookies) and a stop that
/// lets the requests in flight finish.
public final class ServeListener: Sendable {
    public struct Request: Sendable {
        public var method: String
        /// Path and query as sent, undecoded (API Gateway's rawPath and rawQueryString).
        public var target: String
        public var httpVersion: String
        /// In the order received, names as sent.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        public var peerAddress: String
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    public struct BindFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// What a client may take of serve, so that slow, idle or too many clients cannot stop it
    /// (docs/local-development.md states them).
    public struct Limits: Sendable {
        /// API Gateway's own limit is 10 MB; a handler refuses anything over 64 KiB anyway, so a
        /// body past this is refused before it is read.
        public var maximumBodyBytes = 1 << 20
        /// Past this many open connections, new ones wait in the kernel's backlog.
        public var maximumConnections = 128
        public var idleSeconds: Double = 60
        public var headSeconds: Double = 30
        public var bodySeconds: Double = 60
        /// For a client that stops reading its answer.
        public var sendSeconds: Double = 30

        public init() {}

        var reader: HTTPRequestReader.Limits {
            HTTPRequestReader.Limits(maximumBodyBytes: maximumBodyBytes, idleSeconds: idleSeconds, headSeconds: headSeconds,
                                     bodySeconds: bodySeconds)
        }
    }

    public let host: String
    public let port: UInt16
    public let limits: Limits
    private let listener: Int32
    private let handler: @Sendable (Request) -> Response

    private struct State {
        var stopping = false
        var listenerClosed = false
        /// Connections with no request under way (new ones, and kept-alive ones between requests):
        /// a stop closes them. Browsers open connections ahead of any request; waiting for those
        /// would hold every Ctrl-C for the whole timeout.
        var idle: Set<Int32> = []
        /// Connections reading a request or answering one: a stop waits for them.
        var busy: Set<Int32> = []
    }

    private let state = Mutex(State())

    /// Listens on `host` (an IPv4 address) and `port` (0: one the system chooses).
    public init(host: String, port: UInt16, limits: Limits = Limits(),
                handler: @escaping @Sendable (Request) -> Response) throws(BindFailure) {
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else {
            throw BindFailure(description: "--host \(host) is not an IPv4 address")
        }
        let listening: (descriptor: Int32, port: UInt16)
        do {
            listening = try TCPListener.listen(on: address, port: port)
        } catch {
            let reason = error.errno == EADDRINUSE ? "the port is in use" : String(cString: strerror(error.errno))
            throw BindFailure(description: error.operation == "socket" ? "cannot open a socket: \(reason)"
                                                                       : "cannot listen on \(host):\(port): \(reason)")
        }
        self.host = host
        self.port = listening.port
        self.limits = limits
        listener = listening.descriptor
        self.handler = handler
        BackgroundThread.detach { [self] in acceptLoop() }
    }

    /// Stops taking connections, closes the idle ones and returns once every request in flight
    /// has been answered (or `timeoutSeconds` passed: a client that began a request and never
    /// finished it must not hold the process forever). Connections the kernel had already
    /// completed are taken first, and an idle connection whose request bytes have arrived but
    /// not yet been read counts as in flight: their clients did send before the stop.
    @discardableResult
    public func stop(timeoutSeconds: Double = 30) -> Bool {
        let alreadyStopping = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return state.stopping
        }
        if !alreadyStopping {
            _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { break }
                startServing(connection)
            }
            state.withLock { state in
                if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
                for connection in state.idle {
                    var unread: Int32 = 0
                    if ioctl(connection, UInt(FIONREAD), &unread) == 0, unread > 0 {
                        state.idle.remove(connection)
                        state.busy.insert(connection)
                    } else {
                        shutdown(connection, Int32(SHUT_RDWR))
                    }
                }
            }
        }
        let deadline = monotonicSeconds() + timeoutSeconds
        while monotonicSeconds() < deadline {
            if state.withLock({ $0.busy.isEmpty }) { return true }
            usleep(10_000)
        }
        return false
    }

    public var requestsInFlight: Int { state.withLock { $0.busy.count } }

    private func acceptLoop() {
        defer {
            state.withLock { state in
                state.listenerClosed = true
                close(listener)
            }
        }
        // EAGAIN: stop() made the listener non-blocking while it drains the backlog. Out of
        // descriptors or memory passes once connections close: waiting beats stopping for good.
        TCPListener.acceptConnections(listener, retrying: { error in
            if [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error) {
                usleep(50_000)
                return true
            }
            return error == EINTR || error == ECONNABORTED || error == EPROTO || (error == EAGAIN && !state.withLock { $0.stopping })
        }, take: { connection in
            startServing(connection)
            // At the cap, further clients wait in the kernel's backlog instead of each taking a
            // thread and a descriptor; the limits close idle and slow ones to make room.
            while state.withLock({ $0.idle.count + $0.busy.count >= limits.maximumConnections && !$0.stopping }) { usleep(10_000) }
            return true
        })
    }

    private func startServing(_ connection: Int32) {
        _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
        var timeout = timeval(tv_sec: Int(limits.sendSeconds), tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        state.withLock { _ = $0.idle.insert(connection) }
        BackgroundThread.detach { [self] in serve(connection) }
    }

    private func serve(_ connection: Int32) {
        defer {
            state.withLock { state in
                state.busy.remove(connection)
                state.idle.remove(connection)
                close(connection)
            }
        }
        let peer = ServeListener.peerAddress(connection)
        var reader = HTTPRequestReader(connection: connection, limits: limits.reader)
        while true {
            let request: Request
            // The first bytes of a request: the connection is busy, unless a stop has begun and
            // closed it as idle (then it answers no new request).
            let outcome = reader.next(started: {
                state.withLock { state -> Bool in
                    guard state.idle.contains(connection) else { return true }
                    if state.stopping { return false }
                    state.idle.remove(connection)
                    state.busy.insert(connection)
                    return true
                }
            })
            switch outcome {
            case .closed:
                return
            case .refused(let status, let message):
                _ = SocketIO.sendAll(connection, ServeListener.serialize(ServeListener.refusal(status, message), closing: true))
                return
            case .request(let head, let body):
                request = Request(method: head.method, target: head.target, httpVersion: head.version, headers: head.headers,
                                  body: body, peerAddress: peer)
            }
            let response = handler(request)
            let closing = request.headers.contains { $0.name.lowercased() == "connection" && $0.value.lowercased() == "close" }
                || request.httpVersion == "HTTP/1.0" || state.withLock { $0.stopping }
            guard SocketIO.sendAll(connection, ServeListener.serialize(response, closing: closing)), !closing else { return }
            let stopping = state.withLock { state -> Bool in
                guard !state.stopping else { return true }
                state.busy.remove(connection)
                state.idle.insert(connection)
                return false
            }
            if stopping { return }
        }
    }

    /// A request refused before any route sees it: the contract's error body, at `status`.
    public static func refusal(_ status: Int, _ message: String) -> Response {
        let body: JSONValue = ["error": ["code": .string(ErrorCode.invalidRequest.rawValue), "message": .string(message),
                                         "status": .number(status), "retryable": false]]
        return Response(status: status, headers: [("content-type", "application/json")], body: body.serializedBytes())
    }

    /// API Gateway's own answers are `{"message": "..."}`.
    public static func message(_ status: Int, _ text: String, headers: [(String, String)] = []) -> Response {
        Response(status: status, headers: [("content-type", "application/json")] + headers,
                 body: JSONValue.object(["message": .string(text)]).serializedBytes())
    }

    static func serialize(_ response: Response, closing: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n"
        for (name, value) in response.headers where name.lowercased() != "content-length" && name.lowercased() != "connection" {
            head += "\(name): \(value)\r\n"
        }
        head += "content-length: \(response.body.count)\r\n"
        if closing { head += "connection: close\r\n" }
        head += "\r\n"
        return Array(head.utf8) + response.body
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 409: "Conflict"
        case 408: "Request Timeout"
        case 411: "Length Required"
        case 413: "Payload Too Large"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    static func peerAddress(_ connection: Int32) -> String {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let found = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(connection, $0, &length) }
        }
        guard found == 0 else { return "" }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count)) != nil else { return "" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
