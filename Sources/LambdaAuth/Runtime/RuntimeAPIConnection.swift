import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Plain HTTP/1.1 over one kept-alive TCP connection to the Runtime API (`AWS_LAMBDA_RUNTIME_API`,
/// `host:port`, on loopback under Lambda). It is not libcurl on purpose: loading libcurl maps
/// 36 more shared libraries, about half of a cold start, only to talk plain HTTP to a local peer
/// before the first event. libcurl stays for the handlers' HTTPS calls, loaded when first used.
///
/// Only `http://ADDRESS/...` URLs of its own address are served. A response is read strictly
/// (HTTPResponseReader): a malformed one, a reset or a close mid-response are `.connection`
/// failures, which RuntimeAPIClient retries after a backoff on a fresh connection, as it retried
/// curl's.
public final class RuntimeAPIConnection: HTTPClient, Sendable {
    public let address: String
    private let urlPrefix: String
    private let state = Mutex<Socket?>(nil)

    public init(address: String) {
        self.address = address
        self.urlPrefix = "http://\(address)/"
    }

    deinit {
        state.withLock { $0?.close() }
    }

    public func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        guard request.url.hasPrefix(urlPrefix) else { throw .invalidURL(request.url) }
        let target = String(request.url.dropFirst(urlPrefix.count - 1))
        let head = requestHead(request, target: target)
        return try state.withLock { (socket) throws(HTTPClientError) -> HTTPResponse in
            // A kept connection the peer has since closed fails before one byte of answer comes:
            // that request was never read, so it is sent again at once on a new connection.
            var reused = socket != nil
            while true {
                if socket == nil { socket = try Socket.connect(to: address) }
                do throws(HTTPResponseReader.Failure) {
                    let response = try socket!.exchange(head: head, body: request.body, timeout: request.timeout,
                                                        bodyLimit: request.maximumResponseBytes, expectsBody: request.method != "HEAD")
                    if response.connectionCloses {
                        socket?.close()
                        socket = nil
                    }
                    return HTTPResponse(status: response.status, headers: response.headers, body: response.body)
                } catch {
                    socket?.close()
                    socket = nil
                    switch error {
                    case .closed(receivedAny: false, _) where reused:
                        reused = false
                        continue
                    case .closed(_, let detail): throw .connection(detail)
                    case .malformed(let reason): throw .connection("malformed response from the Runtime API: \(reason)")
                    case .tooLarge(let limit): throw .responseTooLarge(limit: limit)
                    case .source(let failure): throw failure
                    }
                }
            }
        }
    }

    private func requestHead(_ request: HTTPRequest, target: String) -> [UInt8] {
        var head = "\(request.method) \(target) HTTP/1.1\r\nHost: \(address)\r\nUser-Agent: lambda-auth\r\n"
        if !request.body.isEmpty || request.method == "POST" || request.method == "PUT" {
            head += "Content-Length: \(request.body.count)\r\n"
        }
        for header in request.headers {
            // Our own header values; a line break in one must never split the request.
            let value = header.value.contains(where: { $0 == "\r" || $0 == "\n" })
                ? String(header.value.map { $0 == "\r" || $0 == "\n" ? " " : $0 }) : header.value
            head += "\(header.name): \(value)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8)
    }
}

/// One TCP connection and the reader of its responses.
private struct Socket {
    let descriptor: Int32
    var reader: HTTPResponseReader
    /// The receive/send timeout currently set on the socket, in seconds (0: none).
    var timeout: Double = 0

    static func connect(to address: String) throws(HTTPClientError) -> Socket {
        guard let endpoint = Endpoint(address) else {
            throw .invalidURL("AWS_LAMBDA_RUNTIME_API=\(address) is not host:port")
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (endpoint.isNumeric ? AI_NUMERICHOST : 0)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(endpoint.host, String(endpoint.port), &hints, &found)
        guard status == 0, let first = found else {
            throw .connection("cannot resolve \(endpoint.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(found) }
        var lastError: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else {
                lastError = errno
                continue
            }
            var connected = Glibc.connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0
            if !connected && errno == EINTR { connected = waitForConnection(descriptor) }
            guard connected else {
                lastError = errno
                Glibc.close(descriptor)
                continue
            }
            // Requests and answers are small and strictly alternate: Nagle would only delay them.
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return Socket(descriptor: descriptor, reader: HTTPResponseReader { (buffer) throws(HTTPClientError) -> Bool in
                try Socket.receive(descriptor, into: &buffer)
            })
        }
        throw .connection("connect to \(address): \(String(cString: strerror(lastError)))")
    }

    /// A connect interrupted by a signal goes on in the background: wait until it is done.
    private static func waitForConnection(_ descriptor: Int32) -> Bool {
        var poll = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        while Glibc.poll(&poll, 1, -1) < 0 { guard errno == EINTR else { return false } }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length) == 0, failure == 0 else {
            errno = failure
            return false
        }
        return true
    }

    mutating func exchange(head: [UInt8], body: [UInt8], timeout: Double, bodyLimit: Int,
                           expectsBody: Bool) throws(HTTPResponseReader.Failure) -> HTTPResponseReader.Response {
        if timeout != self.timeout {
            setTimeout(timeout)
            self.timeout = timeout
        }
        reader.reset()
        do {
            try sendAll(head, body)
        } catch {
            // Refused before anything was read (e.g. the peer closed a kept connection).
            throw .closed(receivedAny: false, detail: error.description)
        }
        let response = try reader.read(bodyLimit: bodyLimit, expectsBody: expectsBody)
        // Bytes after the response would be a peer's bug: the connection is not trusted further.
        guard !reader.hasUnreadBytes else {
            return HTTPResponseReader.Response(status: response.status, headers: response.headers, body: response.body,
                                               connectionCloses: true)
        }
        return response
    }

    /// Head and body in one system call where they fit, so a small request is one segment.
    private func sendAll(_ head: [UInt8], _ body: [UInt8]) throws(HTTPClientError) {
        var sentHead = 0, sentBody = 0
        while sentHead < head.count || sentBody < body.count {
            let sent: Int = head.withUnsafeBytes { headBytes in
                body.withUnsafeBytes { bodyBytes in
                    var vectors = [
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: headBytes.baseAddress! + sentHead), iov_len: head.count - sentHead),
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: bodyBytes.baseAddress.map { $0 + sentBody }),
                              iov_len: body.count - sentBody),
                    ]
                    return vectors.withUnsafeMutableBufferPointer { vectors in
                        var message = msghdr()
                        message.msg_iov = vectors.baseAddress
                        message.msg_iovlen = body.count > sentBody ? 2 : 1
                        return sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL))
                    }
                }
            }
            if sent < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw .timeout }
                throw .connection("send: \(String(cString: strerror(errno)))")
            }
            let forHead = min(sent, head.count - sentHead)
            sentHead += forHead
            sentBody += sent - forHead
        }
    }

    static func receive(_ descriptor: Int32, into buffer: inout [UInt8]) throws(HTTPClientError) -> Bool {
        let chunkBytes = HTTPResponseReader.receiveChunkBytes
        while true {
            // Only what arrived is copied: growing the buffer by a zeroed chunk before each recv
            // cost a tenth of a warm invocation (the 202 and the next event are a few hundred bytes).
            let count = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: chunkBytes) { chunk in
                let count = recv(descriptor, chunk.baseAddress!, chunkBytes, 0)
                if count > 0 { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[..<count])) }
                return count
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { throw .timeout }
                // A reset reads as the end of the stream: HTTPResponseReader says how far it got.
                if errno == ECONNRESET { return false }
                throw .connection("recv: \(String(cString: strerror(errno)))")
            }
            return count > 0
        }
    }

    private func setTimeout(_ seconds: Double) {
        var value = timeval(tv_sec: seconds > 0 ? Int(seconds) : 0,
                            tv_usec: seconds > 0 ? max(1, Int((seconds - seconds.rounded(.down)) * 1e6)) : 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// `host:port`, `[v6]:port`.
private struct Endpoint {
    let host: String
    let port: UInt16
    let isNumeric: Bool

    init?(_ address: String) {
        let host: Substring, port: Substring
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]"), address[address.index(after: close)...].hasPrefix(":") else { return nil }
            host = address[address.index(after: address.startIndex)..<close]
            port = address[address.index(close, offsetBy: 2)...]
        } else {
            guard let colon = address.lastIndex(of: ":") else { return nil }
            host = address[..<colon]
            port = address[address.index(after: colon)...]
        }
        guard !host.isEmpty, !port.isEmpty, port.utf8.count <= 5, port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let number = UInt16(port), number > 0 else { return nil }
        self.host = String(host)
        self.port = number
        isNumeric = host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":")
            || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) } && host.contains(where: { $0 == "." || $0 == ":" })
    }
}
