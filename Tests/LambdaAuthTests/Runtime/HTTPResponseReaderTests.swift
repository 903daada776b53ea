@testable import LambdaAuth
import Testing

/// The strict response reader fed from memory: every split point of a response, and the bounds.
@Suite struct HTTPResponseReaderTests {
    /// A source handing out `segments` one per call, then the end of the stream.
    final class Segments {
        var remaining: [[UInt8]]
        init(_ segments: [[UInt8]]) { remaining = segments }

        var source: HTTPResponseReader.Source {
            { (buffer) throws(HTTPClientError) -> Bool in
                guard !self.remaining.isEmpty else { return false }
                buffer.append(contentsOf: self.remaining.removeFirst())
                return true
            }
        }
    }

    static let chunked = Array(("HTTP/1.1 200 OK\r\nLambda-Runtime-Aws-Request-Id: r\r\nTransfer-Encoding: chunked\r\n\r\n"
        + "3\r\nabc\r\n10;name=value\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\n").utf8)
    static let plain = Array("HTTP/1.1 202 Accepted\r\nContent-Length: 16\r\nConnection: keep-alive\r\n\r\n{\"status\":\"OK\"}\n".utf8)

    @Test(arguments: [chunked, plain])
    func everySplitInTwoReadsTheSameResponse(_ bytes: [UInt8]) throws {
        for split in 1..<bytes.count {
            let segments = Segments([Array(bytes[..<split]), Array(bytes[split...])])
            var reader = HTTPResponseReader(source: segments.source)
            let response = try reader.read(bodyLimit: 1024)
            #expect(!reader.hasUnreadBytes)
            if bytes == HTTPResponseReaderTests.chunked {
                #expect(response.status == 200 && response.body == Array("abc0123456789abcdef".utf8), "split at \(split)")
                #expect(response.headers["lambda-runtime-aws-request-id"] == "r")
            } else {
                #expect(response.status == 202 && response.body.count == 16 && !response.connectionCloses, "split at \(split)")
            }
        }
    }

    @Test func interimResponsesAreSkippedAndCloseIsNoted() throws {
        let bytes = Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\n{}".utf8)
        var reader = HTTPResponseReader(source: Segments([bytes]).source)
        let response = try reader.read(bodyLimit: 10)
        #expect(response.status == 200 && response.body == Array("{}".utf8) && response.connectionCloses)
    }

    @Test func bodiesOverTheLimitAreRefusedWhateverTheirFraming() throws {
        for bytes in [Array("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n0123456789a".utf8),
                      Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n6789a\r\n0\r\n\r\n".utf8),
                      Array("HTTP/1.1 200 OK\r\n\r\n0123456789a".utf8)] {
            var reader = HTTPResponseReader(source: Segments([bytes]).source)
            #expect(throws: HTTPResponseReader.Failure.self) { try reader.read(bodyLimit: 10) }
        }
    }

    @Test func anEndBeforeAnyByteIsToldApartFromOneMidResponse() throws {
        var empty = HTTPResponseReader(source: Segments([]).source)
        let nothing = try #require(throws: HTTPResponseReader.Failure.self) { try empty.read(bodyLimit: 10) }
        guard case .closed(receivedAny: false, _) = nothing else {
            Issue.record("\(nothing)")
            return
        }
        var cut = HTTPResponseReader(source: Segments([Array("HTTP/1.1 200 OK\r\nContent-Le".utf8)]).source)
        let partial = try #require(throws: HTTPResponseReader.Failure.self) { try cut.read(bodyLimit: 10) }
        guard case .closed(receivedAny: true, _) = partial else {
            Issue.record("\(partial)")
            return
        }
    }

    @Test func aHeadLineIsRefusedAsSoonAsItPassesTheLimitWithoutItsEnd() throws {
        // An endless header: the reader stops once it holds more than a line's worth, not at the end.
        var served = 0
        var reader = HTTPResponseReader { (buffer) throws(HTTPClientError) -> Bool in
            if served == 0 { buffer.append(contentsOf: Array("HTTP/1.1 200 OK\r\nX: ".utf8)) }
            buffer.append(contentsOf: [UInt8](repeating: 0x61, count: 1024))
            served += 1
            return served < 1000
        }
        let failure = try #require(throws: HTTPResponseReader.Failure.self) { try reader.read(bodyLimit: 10) }
        guard case .malformed(let reason) = failure else {
            Issue.record("\(failure)")
            return
        }
        #expect(reason.contains("over 8192 bytes"))
        #expect(served <= 10)
    }
}
