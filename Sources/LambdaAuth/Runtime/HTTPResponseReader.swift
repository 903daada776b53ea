/// Reads one HTTP/1.1 response from a byte source, strictly and within fixed bounds: the Runtime
/// API is a peer we trust to be correct, not to be small, so anything outside the narrow grammar
/// it uses is refused rather than guessed at. The source is abstract so that the parser can be
/// fed a response split anywhere (tests) as well as a socket.
struct HTTPResponseReader {
    /// A line of the head (status line, header, chunk size) longer than this is refused.
    static let maximumLineBytes = 8 * 1024
    static let maximumHeaderCount = 64
    /// `1xx` interim responses skipped before the real one.
    static let maximumInterimResponses = 4
    /// What a source reads at a time.
    static let receiveChunkBytes = 64 * 1024

    enum Failure: Error {
        /// The peer closed (or reset) the connection; `receivedAny` is false when not one byte of
        /// this response had come, which on a reused connection means the request went unread.
        case closed(receivedAny: Bool, detail: String)
        case malformed(String)
        case tooLarge(limit: Int)
        /// The source's own failure (a socket error, a timeout).
        case source(HTTPClientError)
    }

    /// Appends what the peer sent next to `buffer`: false at end of stream.
    typealias Source = (inout [UInt8]) throws(HTTPClientError) -> Bool

    private(set) var buffer: [UInt8] = []
    private var position = 0
    private var receivedAny = false
    private let source: Source

    init(source: @escaping Source) {
        self.source = source
        buffer.reserveCapacity(16 * 1024)
    }

    /// Bytes received beyond the response just read (a well-behaved peer sends none).
    var hasUnreadBytes: Bool { position < buffer.count }

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        /// The peer asked to close, or the body ran to the end of the stream.
        var connectionCloses: Bool
    }

    /// Reads a whole response; `bodyLimit` bounds the body (chunked or not).
    mutating func read(bodyLimit: Int, expectsBody: Bool = true) throws(Failure) -> Response {
        var interim = 0
        while true {
            let status = try readStatusLine()
            let head = try readHeaders()
            if (100...199).contains(status) {
                interim += 1
                guard interim <= HTTPResponseReader.maximumInterimResponses else { throw .malformed("too many interim responses") }
                continue
            }
            var closes = head.connectionCloses
            let body: [UInt8]
            if !expectsBody || status == 204 || status == 304 {
                body = []
            } else if head.chunked {
                body = try readChunkedBody(limit: bodyLimit)
            } else if let length = head.contentLength {
                guard length <= bodyLimit else { throw .tooLarge(limit: bodyLimit) }
                body = try readBody(length: length)
            } else {
                body = try readToEnd(limit: bodyLimit)
                closes = true
            }
            return Response(status: status, headers: head.fields, body: body, connectionCloses: closes)
        }
    }

    // MARK: Head

    private mutating func readStatusLine() throws(Failure) -> Int {
        let line = try readLine()
        let start = line.startIndex
        // "HTTP/1.x SP 3DIGIT [SP reason]"
        guard line.count >= 12, line.starts(with: HTTPResponseReader.versionPrefix),
              line[start + 7] == UInt8(ascii: "0") || line[start + 7] == UInt8(ascii: "1"), line[start + 8] == UInt8(ascii: " "),
              line[(start + 9)...(start + 11)].allSatisfy(HTTPResponseReader.isDigit),
              line.count == 12 || line[start + 12] == UInt8(ascii: " ") else {
            throw .malformed("not an HTTP/1.x status line")
        }
        return line[(start + 9)...(start + 11)].reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    private struct Head {
        var fields: [String: String] = [:]
        var contentLength: Int?
        var chunked = false
        var connectionCloses = false
    }

    private mutating func readHeaders() throws(Failure) -> Head {
        var head = Head()
        var count = 0
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            count += 1
            guard count <= HTTPResponseReader.maximumHeaderCount else {
                throw .malformed("more than \(HTTPResponseReader.maximumHeaderCount) header lines")
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line[..<colon].allSatisfy(HTTPResponseReader.isTokenCharacter) else {
                // Also refuses obsolete line folding (a line starting with a space).
                throw .malformed("a header line is not `name: value`")
            }
            var value = line[(colon + 1)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
            guard !value.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
                throw .malformed("a header value holds a control character")
            }
            let name = String(decoding: line[..<colon].map(HTTPResponseReader.lowercased), as: UTF8.self)
            let text = String(decoding: value, as: UTF8.self)
            switch name {
            case "content-length":
                guard !value.isEmpty, value.count <= 12, value.allSatisfy(HTTPResponseReader.isDigit), let length = Int(text) else {
                    throw .malformed("Content-Length is not a number")
                }
                guard head.contentLength == nil || head.contentLength == length else { throw .malformed("conflicting Content-Length headers") }
                head.contentLength = length
            case "transfer-encoding":
                // The only coding a Runtime API would use; anything else cannot be framed safely.
                guard text.lowercased() == "chunked", !head.chunked else { throw .malformed("unsupported Transfer-Encoding") }
                head.chunked = true
            case "connection":
                head.connectionCloses = text.lowercased().split(separator: ",").contains { $0.trimmingCharacters(in: " \t") == "close" }
            default:
                break
            }
            head.fields[name] = text
        }
        // Both framings at once is how responses get smuggled: refused, not resolved.
        guard !(head.chunked && head.contentLength != nil) else { throw .malformed("both Content-Length and Transfer-Encoding") }
        return head
    }

    /// One CRLF-terminated line, without its CRLF. A bare LF is refused.
    private mutating func readLine() throws(Failure) -> ArraySlice<UInt8> {
        var scannedPending = 0
        while true {
            let scanned = position + scannedPending
            if let newline = buffer[scanned...].firstIndex(of: 0x0A) {
                guard newline > position, buffer[newline - 1] == 0x0D else { throw .malformed("a line does not end with CRLF") }
                guard newline - 1 - position <= HTTPResponseReader.maximumLineBytes else {
                    throw .malformed("a line of the head is over \(HTTPResponseReader.maximumLineBytes) bytes")
                }
                let line = buffer[position..<(newline - 1)]
                position = newline + 1
                return line
            }
            guard buffer.count - position <= HTTPResponseReader.maximumLineBytes + 1 else {
                throw .malformed("a line of the head is over \(HTTPResponseReader.maximumLineBytes) bytes")
            }
            scannedPending = buffer.count - position
            guard try fill() else { throw .closed(receivedAny: receivedAny, detail: "the connection closed before the response head ended") }
        }
    }

    // MARK: Body

    private mutating func readBody(length: Int) throws(Failure) -> [UInt8] {
        while buffer.count - position < length {
            // Large bodies are read straight to their final size, not grown 64 KiB at a time.
            let needed = position + length
            if buffer.capacity < needed { buffer.reserveCapacity(needed) }
            guard try fill() else {
                throw .closed(receivedAny: true, detail: "the connection closed mid-body (\(buffer.count - position) of \(length) bytes)")
            }
        }
        defer { position += length }
        return Array(buffer[position..<(position + length)])
    }

    private mutating func readChunkedBody(limit: Int) throws(Failure) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let size = try readChunkSize()
            if size == 0 { break }
            guard body.count + size <= limit else { throw .tooLarge(limit: limit) }
            body.append(contentsOf: try readBody(length: size))
            guard try readLine().isEmpty else { throw .malformed("a chunk is longer than its size") }
        }
        // Trailers are read and ignored.
        var trailers = 0
        while try !readLine().isEmpty {
            trailers += 1
            guard trailers <= HTTPResponseReader.maximumHeaderCount else { throw .malformed("too many trailer lines") }
        }
        return body
    }

    /// Its own function so that no slice of the buffer is held while the chunk is read (a held
    /// slice would make the next read copy the whole buffer).
    private mutating func readChunkSize() throws(Failure) -> Int {
        let digits = try readLine().prefix { $0 != UInt8(ascii: ";") }
        guard !digits.isEmpty, digits.count <= 8, digits.allSatisfy(HTTPResponseReader.isHexDigit),
              let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
            throw .malformed("a chunk size is not a hexadecimal number")
        }
        return size
    }

    private mutating func readToEnd(limit: Int) throws(Failure) -> [UInt8] {
        repeat {
            guard buffer.count - position <= limit else { throw .tooLarge(limit: limit) }
        } while try fill()
        defer { position = buffer.count }
        return Array(buffer[position...])
    }

    private mutating func fill() throws(Failure) -> Bool {
        // Consumed bytes are dropped before growing, so a long exchange keeps a small buffer.
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        }
        let before = buffer.count
        do {
            guard try source(&buffer) else { return false }
        } catch {
            throw .source(error)
        }
        if buffer.count > before { receivedAny = true }
        return true
    }

    /// Forgets everything read: the next response starts on fresh bytes.
    mutating func reset() {
        buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
        position = 0
        receivedAny = false
    }

    // MARK: Bytes

    private static let versionPrefix: [UInt8] = Array("HTTP/1.".utf8)

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// RFC 9110 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
        default: return false
        }
    }

    static func lowercased(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte }
}
