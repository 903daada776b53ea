#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// swift-log's `Logger` writing JSON lines on stderr (contract section 1): `timestamp`, `level`,
/// `message`, `requestId` and the call's metadata. Callers pass only non-secret metadata; there is
/// no API that takes a token.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let sink: @Sendable (String) -> Void

    public init(logLevel: Logger.Level = .info, sink: @escaping @Sendable (String) -> Void = writeStandardErrorLine) {
        self.logLevel = logLevel
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: JSONValue] = [:]
        for (key, value) in metadata { object[key] = JSONLogHandler.json(value) }
        for (key, value) in metadataProvider?.get() ?? [:] { object[key] = JSONLogHandler.json(value) }
        for (key, value) in event.metadata ?? [:] { object[key] = JSONLogHandler.json(value) }
        // Log time is always the real time: a fixed AUTH_NOW would make logs lie.
        let now = SystemClock().now()
        let millis = Int64((now - now.rounded(.down)) * 1000)
        // Strings joined as Strings: Substring + String went through a generic append whose first
        // use cost a new process some 190,000 instructions of runtime type look-ups (callgrind).
        var stamp = ISO8601.format(now)
        stamp.removeLast()
        stamp += "." + String(String(1000 + millis).dropFirst()) + "Z"
        object["timestamp"] = .string(stamp)
        object["level"] = .string(event.level.contractName)
        object["message"] = .string(event.message.description)
        let requestID: String?
        if case .string(let ownRequestID)? = metadata[JSONLogHandler.requestIDKey] {
            requestID = ownRequestID
        } else {
            requestID = CurrentInvocation.requestID
        }
        if let requestID {
            object["requestId"] = .string(requestID)
            // Every line of an invocation carries its trace, as Powertools' logger does, so that
            // one X-Ray trace finds all of them, not only the event line.
            if let traceID = CurrentInvocation.traceID { object["traceId"] = .string(traceID) }
        }
        sink(JSONValue.object(object).serialized())
    }

    static let requestIDKey = "requestId"

    /// Numbers, booleans and null stay JSON numbers, booleans and null (swift-log metadata is
    /// text otherwise); see the `Logger.MetadataValue` helpers below.
    static func json(_ value: Logger.MetadataValue) -> JSONValue {
        switch value {
        case .string(let text): return .string(text)
        case .stringConvertible(let convertible):
            // Casts to concrete types only: a cast to a protocol searches the binary's conformances.
            if let flag = convertible as? Bool { return .bool(flag) }
            if let integer = convertible as? JSONInteger { return .number(integer.description) }
            if let integer = convertible as? Int { return .number(String(integer)) }
            if convertible is JSONNull { return .null }
            if let decimal = convertible as? JSONDecimal { return .number(decimal.description) }
            return .string(convertible.description)
        case .array(let values): return .array(values.map(json))
        case .dictionary(let members): return .object(members.mapValues(json))
        }
    }
}

extension Logger {
    /// A logger writing the contract's JSON lines. Built with its own handler rather than through
    /// the process-wide `LoggingSystem.bootstrap`, so that tests can run many loggers, each with
    /// its own sink, in one process.
    public static func jsonLines(level: Logger.Level = .info,
                                 sink: @escaping @Sendable (String) -> Void = writeStandardErrorLine) -> Logger {
        Logger(label: "lambda-auth") { _ in JSONLogHandler(logLevel: level, sink: sink) }
    }

    /// The same logger, its lines carrying `requestID` (the Runtime API loop makes one per
    /// invocation).
    public func with(requestID: String?) -> Logger {
        var copy = self
        copy[metadataKey: JSONLogHandler.requestIDKey] = requestID.map { .string($0) }
        return copy
    }
}

extension Logger.Level {
    /// The contract's level names (`AUTH_LOG_LEVEL`, the `level` key): debug, info, warning, error.
    public init?(contractName: String) {
        switch contractName {
        case "debug": self = .debug
        case "info": self = .info
        case "warning": self = .warning
        case "error": self = .error
        default: return nil
        }
    }

    /// swift-log's extra levels are written as the nearest of the contract's four.
    public var contractName: String {
        switch self {
        case .trace, .debug: return "debug"
        case .info, .notice: return "info"
        case .warning: return "warning"
        case .error, .critical: return "error"
        }
    }
}

/// Writes `line` and a newline to stderr, whole: the log lines, and authctl's and the bench's
/// messages.
public let writeStandardErrorLine: @Sendable (String) -> Void = { line in writeLine(line, to: 2) }

/// Writes `line` and a newline to stdout, whole: under the Runtime API, where stdout is not the
/// response, the metrics' EMF lines (CloudWatch reads a function's output as its log).
public let writeStandardOutputLine: @Sendable (String) -> Void = { line in writeLine(line, to: 1) }

private func writeLine(_ line: String, to descriptor: Int32) {
    var bytes = Array(line.utf8)
    bytes.append(0x0A)
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written <= 0 { break }
            offset += written
        }
    }
}

/// The request a resident process is serving now. Components built once per process (the JWKS
/// cache, the store) keep the logger they were built with; their lines still carry the request id
/// of the invocation they happen in, because a handler serves one invocation at a time.
public enum CurrentInvocation {
    /// Task-local (bound on the serving thread), not process-global: what runs beside the loop
    /// (another thread, a test served in parallel) never borrows the invocation's id.
    @TaskLocal private static var current: String?

    public static var requestID: String? { current }

    /// X-Ray's trace id of the invocation being served: the Runtime API loop exports it as
    /// `_X_AMZN_TRACE_ID` (Lambda's own name, which X-Ray's SDKs read) and clears it between
    /// invocations, so it never names another invocation's trace.
    public static var traceID: String? {
        guard let value = getenv("_X_AMZN_TRACE_ID") else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    /// Runs `body` with `requestID` as the current request.
    public static func serving<T, E: Error>(_ requestID: String, _ body: () throws(E) -> T) throws(E) -> T {
        do {
            return try $current.withValue(requestID) { try body() }
        } catch {
            throw error as! E
        }
    }
}
