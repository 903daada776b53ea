#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

public enum LogLevel: Int, Comparable, Sendable {
    case debug = 0, info, warning, error

    public init?(name: String) {
        switch name {
        case "debug": self = .debug
        case "info": self = .info
        case "warning": self = .warning
        case "error": self = .error
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .warning: return "warning"
        case .error: return "error"
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// JSON lines on stderr (contract section 1). A logger is a value: the Runtime API loop makes one
/// per invocation with its `requestId`. Callers pass only non-secret fields; there is no API
/// that takes a token.
public struct Logger: Sendable {
    public var minimumLevel: LogLevel
    public var requestID: String?
    let sink: @Sendable (String) -> Void

    public init(minimumLevel: LogLevel = .info, requestID: String? = nil,
                sink: @escaping @Sendable (String) -> Void = Logger.standardError) {
        self.minimumLevel = minimumLevel
        self.requestID = requestID
        self.sink = sink
    }

    public static let standardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }

    public func with(requestID: String?) -> Logger {
        var copy = self
        copy.requestID = requestID
        return copy
    }

    public func log(_ level: LogLevel, _ message: String, _ fields: [String: JSONValue] = [:]) {
        guard level >= minimumLevel else { return }
        var object = fields
        // Log time is always the real time: a fixed AUTH_NOW would make logs lie.
        let now = SystemClock().now()
        let millis = Int64((now - now.rounded(.down)) * 1000)
        let stamp = ISO8601.format(now).dropLast() + "." + String(1000 + millis).dropFirst() + "Z"
        object["timestamp"] = .string(String(stamp))
        object["level"] = .string(level.name)
        object["message"] = .string(message)
        if let requestID = requestID ?? CurrentInvocation.requestID { object["requestId"] = .string(requestID) }
        sink(JSONValue.object(object).serialized())
    }

    public func debug(_ message: String, _ fields: [String: JSONValue] = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: JSONValue] = [:]) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: JSONValue] = [:]) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: JSONValue] = [:]) { log(.error, message, fields) }
}

/// The request a resident process is serving now. Components built once per process (the JWKS
/// cache, the store) keep the logger they were built with; their lines still carry the request id
/// of the invocation they happen in, because a handler serves one invocation at a time.
public enum CurrentInvocation {
    private static let current = Mutex<String?>(nil)

    public static var requestID: String? { current.withLock { $0 } }

    /// Runs `body` with `requestID` as the current request.
    public static func serving<T, E: Error>(_ requestID: String, _ body: () throws(E) -> T) throws(E) -> T {
        current.withLock { $0 = requestID }
        defer { current.withLock { $0 = nil } }
        return try body()
    }
}
