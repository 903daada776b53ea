import LambdaAuth
import LambdaAuthTestSupport
import Logging
import Testing

/// The exact JSON lines a logger writes (contract section 1): keys, value types, level names,
/// escaping, the request id and level filtering. The timestamp is the real time, so it is checked
/// for its form and its closeness to now, then masked for the comparison.
@Suite struct LogLineTests {
    static let expected = [
        #"{"level":"debug","message":"runtime loop started","requestId":"req-1","timestamp":"<T>"}"#,
        #"{"count":3,"deadlineMs":1767225600123,"flag":true,"level":"info","message":"fields of every kind","negative":-5,"off":false,"provider":"google","requestId":"req-1","timestamp":"<T>","traceId":null}"#,
        #"{"level":"warning","message":"quote \" backslash \\ newline \n tab \t é ✓","reason":"a \"quoted\" reason\n","requestId":"req-1","timestamp":"<T>"}"#,
        #"{"code":"INTERNAL","level":"error","message":"no fields beside the code","requestId":"req-1","timestamp":"<T>"}"#,
        #"{"level":"info","message":"outside any request","timestamp":"<T>"}"#,
        #"{"level":"info","message":"inside a served invocation","requestId":"current-7","timestamp":"<T>"}"#,
        #"{"level":"warning","message":"a warning passes a warning logger","timestamp":"<T>"}"#,
        #"{"level":"error","message":"an error passes a warning logger","timestamp":"<T>"}"#,
    ]

    @Test func linesAreExactlyTheContractsJSON() throws {
        let log = CapturedLog()
        let before = SystemClock().now()
        let debug = log.logger
        let request = debug.with(requestID: "req-1")
        request.debug("runtime loop started")
        request.info("fields of every kind", metadata: [
            "provider": .string("google"), "count": .number(3), "deadlineMs": .number(Int64(1_767_225_600_123)),
            "negative": .number(-5), "flag": .bool(true), "off": .bool(false), "traceId": .null,
        ])
        request.warning("quote \" backslash \\ newline \n tab \t é ✓", metadata: ["reason": .string("a \"quoted\" reason\n")])
        request.error("no fields beside the code", metadata: ["code": .string("INTERNAL")])
        debug.info("outside any request")
        CurrentInvocation.serving("current-7") { debug.info("inside a served invocation") }

        var warning = log.logger
        warning.logLevel = .warning
        warning.debug("a debug line is dropped")
        warning.info("an info line is dropped")
        warning.warning("a warning passes a warning logger")
        warning.error("an error passes a warning logger")
        let after = SystemClock().now()

        var masked: [String] = []
        for line in log.lines {
            let stamp = try #require(try JSONValue.parse(line)["timestamp"]?.stringValue)
            let bytes = Array(stamp.utf8)
            #expect(bytes.count == 24 && bytes[19] == UInt8(ascii: ".") && bytes[23] == UInt8(ascii: "Z"), "\(stamp)")
            let instant = try #require(ISO8601.parse(stamp))
            #expect(instant >= before.rounded(.down) - 0.001 && instant <= after + 0.001, "\(stamp)")
            masked.append(line.replacingFirst(#""timestamp":"\#(stamp)""#, with: #""timestamp":"<T>""#))
        }
        #expect(masked == LogLineTests.expected)
    }
}

extension String {
    fileprivate func replacingFirst(_ target: String, with replacement: String) -> String {
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(target) {
                return String(self[..<index]) + replacement + String(self[self.index(index, offsetBy: target.count)...])
            }
            index = self.index(after: index)
        }
        return self
    }
}

@Suite struct SwiftLogLevelTests {
    /// swift-log's levels beyond the contract's four are written as the nearest contract name.
    @Test func otherLevelsUseTheContractsNames() throws {
        let log = CapturedLog()
        log.logger.trace("below debug, dropped")
        log.logger.notice("a notice")
        log.logger.critical("a critical failure")
        let levels = log.lines.compactMap { try? JSONValue.parse($0)["level"]?.stringValue }
        #expect(levels == ["info", "error"])
    }

    @Test func configurationAcceptsOnlyTheContractsNames() {
        #expect(["debug", "info", "warning", "error"].compactMap { Logger.Level(contractName: $0) } == [.debug, .info, .warning, .error])
        #expect(["trace", "notice", "critical", "INFO", ""].compactMap { Logger.Level(contractName: $0) }.isEmpty)
    }
}
