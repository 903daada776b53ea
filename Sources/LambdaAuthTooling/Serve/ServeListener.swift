import LambdaAuth
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP/1.1 listener of `authctl serve`: a thread per connection (handlers are Sendable and
/// block on the store and on HTTP calls, so threads are the simple fit), keep-alive, bodies by
/// `Content-Length`. Beside `LoopbackHTTPServer` rather than on it: serve needs a chosen host and
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

    /// API Gateway's own limit is 10 MB; a handler refuses anything over 64 KiB anyway, so a body
    /// past this is refused before it is read.
    public static let maximumBodyBytes = 1 << 20
    static let maximumHeadBytes = 64 << 10

    public let host: String
    public let port: UInt16
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
    public init(host: String, port: UInt16, handler: @escaping @Sendable (Request) -> Response) throws(BindFailure) {
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
        // EAGAIN: stop() made the listener non-blocking while it drains the backlog.
        TCPListener.acceptConnections(listener, retrying: { error in
            error == EINTR || error == ECONNABORTED || (error == EAGAIN && !state.withLock { $0.stopping })
        }, take: { connection in
            startServing(connection)
            return true
        })
    }

    private func startServing(_ connection: Int32) {
        _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
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
        var buffer: [UInt8] = []
        while true {
            let request: Request
            switch readRequest(connection, peer: peer, buffer: &buffer) {
            case .closed:
                return
            case .refused(let response):
                _ = SocketIO.sendAll(connection, ServeListener.serialize(response, closing: true))
                return
            case .request(let received):
                request = received
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

    private enum ReadOutcome {
        case request(Request)
        case refused(Response)
        case closed
    }

    private func readRequest(_ connection: Int32, peer: String, buffer: inout [UInt8]) -> ReadOutcome {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd = LoopbackHTTPServer.find(separator, in: buffer)
        while headEnd == nil {
            guard buffer.count <= ServeListener.maximumHeadBytes else {
                return .refused(ServeListener.message(431, "Request Header Fields Too Large"))
            }
            guard SocketIO.receive(connection, into: &buffer) else { return .closed }
            // The first bytes of a request: the connection is busy, unless a stop has begun and
            // closed it as idle (then it answers no new request).
            let proceed = state.withLock { state -> Bool in
                guard state.idle.contains(connection) else { return true }
                if state.stopping { return false }
                state.idle.remove(connection)
                state.busy.insert(connection)
                return true
            }
            guard proceed else { return .closed }
            headEnd = LoopbackHTTPServer.find(separator, in: buffer)
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard requestLine.count == 3, requestLine[1].hasPrefix("/") else {
            return .refused(ServeListener.message(400, "Bad Request"))
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return .refused(ServeListener.message(400, "Bad Request")) }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces()))
        }
        if headers.contains(where: { $0.name.lowercased() == "transfer-encoding" }) {
            return .refused(ServeListener.message(411, "Length Required"))
        }
        let lengthText = headers.last { $0.name.lowercased() == "content-length" }?.value ?? "0"
        guard let length = Int(lengthText), length >= 0 else { return .refused(ServeListener.message(400, "Bad Request")) }
        guard length <= ServeListener.maximumBodyBytes else { return .refused(ServeListener.message(413, "Request Entity Too Large")) }
        let bodyStart = headEnd! + 4
        // curl asks before sending a body over 1 KiB, and would otherwise wait a second for this.
        if buffer.count < bodyStart + length,
           headers.contains(where: { $0.name.lowercased() == "expect" && $0.value.lowercased() == "100-continue" }) {
            guard SocketIO.sendAll(connection, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return .closed }
        }
        while buffer.count < bodyStart + length {
            guard SocketIO.receive(connection, into: &buffer) else { return .closed }
        }
        let body = Array(buffer[bodyStart..<bodyStart + length])
        buffer.removeFirst(bodyStart + length)
        return .request(Request(method: requestLine[0], target: requestLine[1], httpVersion: requestLine[2], headers: headers,
                                body: body, peerAddress: peer))
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
