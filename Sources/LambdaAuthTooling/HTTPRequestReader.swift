import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

/// The one HTTP/1.1 request reader of serve's listener and the loopback test server (RFC 9112).
/// Strict where a lenient reading lets two parsers disagree about where a request ends (request
/// smuggling, when a proxy stands in front): a malformed head is refused rather than repaired.
struct HTTPRequestReader {
    struct Limits: Sendable {
        /// Request line and header fields, up to the empty line.
        var maximumHeadBytes = 64 << 10
        var maximumBodyBytes = 1 << 20
        /// For a request's first byte (a new connection, or a kept-alive one); nil: no limit.
        var idleSeconds: Double?
        /// From a request's first byte to the end of its head.
        var headSeconds: Double?
        /// From the end of the head to the end of the body.
        var bodySeconds: Double?

        /// The test server's: no clock, since a test may hold a connection as long as it likes,
        /// and bodies as large as a Lambda response (6 MB) and more.
        static let unlimited = Limits(maximumBodyBytes: 1 << 30)
    }

    struct Head {
        var method: String
        var target: String
        var version: String
        /// In the order received, names as sent.
        var headers: [(name: String, value: String)]

        func values(_ name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name }.map(\.value)
        }
    }

    enum Outcome {
        case request(Head, body: [UInt8])
        /// Answer this status and close: the connection can no longer be trusted to frame requests.
        case refused(status: Int, message: String)
        /// The peer closed, went quiet past a limit, or `started` said no.
        case closed
    }

    let connection: Int32
    let limits: Limits
    /// Bytes received past the last request (a pipelined next one).
    private var buffer: [UInt8] = []

    init(connection: Int32, limits: Limits) {
        self.connection = connection
        self.limits = limits
    }

    /// `started` is told when the request's first byte is in; answering false closes instead.
    mutating func next(started: () -> Bool = { true }) -> Outcome {
        if buffer.isEmpty {
            guard receive(until: limits.idleSeconds.map { monotonicSeconds() + $0 }) else { return .closed }
        }
        guard started() else { return .closed }
        let headDeadline = limits.headSeconds.map { monotonicSeconds() + $0 }
        var searched = 0
        var headEnd: Int?
        while true {
            headEnd = HTTPRequestReader.find([13, 10, 13, 10], in: buffer, from: max(0, searched - 3))
            searched = buffer.count
            // However the bytes arrived: in one segment past the limit, or a byte at a time.
            if let end = headEnd, end + 4 > limits.maximumHeadBytes { return .refused(status: 431, message: "the request head is over 64 KiB") }
            if headEnd != nil { break }
            if buffer.count > limits.maximumHeadBytes { return .refused(status: 431, message: "the request head is over 64 KiB") }
            guard receive(until: headDeadline) else { return .closed }
        }
        let headBytes = Array(buffer[0..<headEnd!])
        let bodyStart = headEnd! + 4
        let head: Head
        switch HTTPRequestReader.parseHead(headBytes) {
        case .success(let parsed): head = parsed
        case .failure(let refusal): return .refused(status: refusal.status, message: refusal.message)
        }
        let length: Int
        switch HTTPRequestReader.contentLength(head) {
        case .success(let value): length = value
        case .failure(let refusal): return .refused(status: refusal.status, message: refusal.message)
        }
        guard length <= limits.maximumBodyBytes else {
            return .refused(status: 413, message: "the request body is over \(limits.maximumBodyBytes) bytes")
        }
        // curl asks before sending a body over 1 KiB, and would otherwise wait a second for this.
        if buffer.count < bodyStart + length, head.values("expect").contains(where: { $0.lowercased() == "100-continue" }) {
            guard SocketIO.sendAll(connection, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return .closed }
        }
        let bodyDeadline = limits.bodySeconds.map { monotonicSeconds() + $0 }
        while buffer.count < bodyStart + length {
            guard receive(until: bodyDeadline) else { return .closed }
        }
        let body = Array(buffer[bodyStart..<bodyStart + length])
        buffer.removeFirst(bodyStart + length)
        return .request(head, body: body)
    }

    private mutating func receive(until deadline: Double?) -> Bool {
        SocketIO.receive(connection, into: &buffer, deadline: deadline)
    }

    struct Refusal: Error {
        let status: Int
        let message: String
        static func bad(_ message: String) -> Refusal { Refusal(status: 400, message: message) }
    }

    /// RFC 9112 sections 2 to 5: CRLF line ends only (a bare CR or LF ends a line for some parsers
    /// and not others), no obsolete line folding, a token before each colon with nothing between
    /// them (section 5.1: a proxy may read `Content-Length :` as another field), no control
    /// characters in values, and exactly one Host in HTTP/1.1 (section 3.2).
    static func parseHead(_ bytes: [UInt8]) -> Result<Head, Refusal> {
        var start = 0
        // Section 2.2: empty lines before the request line are ignored.
        while bytes.count >= start + 2, bytes[start] == 13, bytes[start + 1] == 10 { start += 2 }
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = start
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 13:
                guard index + 1 < bytes.count, bytes[index + 1] == 10 else { return .failure(.bad("a bare CR in the request head")) }
                lines.append(bytes[lineStart..<index])
                index += 2
                lineStart = index
            case 10: return .failure(.bad("a bare LF in the request head"))
            case 0: return .failure(.bad("a NUL in the request head"))
            default: index += 1
            }
        }
        lines.append(bytes[lineStart..<bytes.count])
        let requestLine = lines.removeFirst().split(separator: 32, omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[0].allSatisfy(isTokenByte),
              requestLine[1].first == UInt8(ascii: "/"), requestLine[1].allSatisfy({ $0 > 32 && $0 != 127 }),
              requestLine[2].elementsEqual("HTTP/1.1".utf8) || requestLine[2].elementsEqual("HTTP/1.0".utf8) else {
            return .failure(.bad("the request line is not METHOD /target HTTP/1.1"))
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line[line.startIndex..<colon].allSatisfy(isTokenByte) else {
                return .failure(.bad("a header field that is not NAME: value"))
            }
            var value = line[(colon + 1)...]
            while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
            while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
            guard !value.contains(where: { ($0 < 32 && $0 != 9) || $0 == 127 }) else {
                return .failure(.bad("a control character in a header field"))
            }
            headers.append((String(decoding: line[line.startIndex..<colon], as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        let head = Head(method: String(decoding: requestLine[0], as: UTF8.self), target: String(decoding: requestLine[1], as: UTF8.self),
                        version: String(decoding: requestLine[2], as: UTF8.self), headers: headers)
        let hosts = head.values("host").count
        guard hosts == 1 || (hosts == 0 && head.version == "HTTP/1.0") else {
            return .failure(.bad(hosts == 0 ? "no Host header" : "more than one Host header"))
        }
        return .success(head)
    }

    /// Section 6.3: a Transfer-Encoding is not read here (411); every Content-Length value is
    /// 1*DIGIT (no sign, no spaces inside) and, when repeated, the same, or the request is refused.
    static func contentLength(_ head: Head) -> Result<Int, Refusal> {
        guard head.values("transfer-encoding").isEmpty else {
            return .failure(Refusal(status: 411, message: "a request body needs a Content-Length (chunked bodies are not read)"))
        }
        let values = head.values("content-length").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: " ") }
        guard let first = values.first else { return .success(0) }
        guard values.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 18,
              first.utf8.allSatisfy({ (48...57).contains($0) }), let length = Int(first) else {
            return .failure(.bad("Content-Length is not one decimal number"))
        }
        return .success(length)
    }

    /// RFC 9110 section 5.6.2's tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int = 0) -> Int? {
        guard haystack.count >= start + needle.count else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index..<index + needle.count].elementsEqual(needle) {
            return index
        }
        return nil
    }
}
