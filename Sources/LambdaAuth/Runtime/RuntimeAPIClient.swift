#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Lambda Runtime API (version 2018-06-01) as the loop needs it: the next event, its answer,
/// and the two failure reports. It knows nothing of handlers or events' contents.
public struct RuntimeAPIClient: Sendable {
    public struct Invocation: Sendable {
        public var requestID: String
        /// Epoch milliseconds by which Lambda wants the answer.
        public var deadlineMilliseconds: Int64?
        public var invokedFunctionARN: String?
        public var traceID: String?
        public var event: [UInt8]
    }

    /// The body of `/invocation/{id}/error` and `/init/error`; `type` also goes in the
    /// `Lambda-Runtime-Function-Error-Type` header.
    public struct ErrorReport: Sendable {
        public var type: String
        public var message: String

        public init(type: String, message: String) {
            self.type = type
            self.message = message
        }

        public var body: JSONValue {
            ["errorMessage": .string(message), "errorType": .string(type), "stackTrace": []]
        }
    }

    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// Refused, reset or timed out even after the bounded retries: Lambda will restart us.
        case unreachable(String)
        /// The Runtime API answered something the loop cannot go on from (Lambda's documented
        /// answer to a non-200 `/next` is to exit).
        case unusable(String)

        public var description: String {
            switch self {
            case .unreachable(let reason): return "the Runtime API is unreachable: \(reason)"
            case .unusable(let reason): return "the Runtime API answered unusably: \(reason)"
            }
        }
    }

    /// Lambda's limit on a synchronous response payload; a larger one is never posted.
    public static let maximumResponseBytes = 6 * 1024 * 1024
    /// Lambda's own limit on an event plus headers' headroom: only so that an event is read whole
    /// (EventCodec refuses anything near this size anyway).
    static let maximumEventBytes = 6 * 1024 * 1024 + 64 * 1024
    /// Backoff before each retry of a refused or reset connection: six attempts over about one
    /// second, enough for a Runtime API that is restarting, never a spin.
    public static let defaultRetryDelays: [Double] = [0.05, 0.1, 0.15, 0.25, 0.45]

    let baseURL: String
    let http: any HTTPClient
    let retryDelays: [Double]
    let sleep: @Sendable (Double) -> Void

    /// `address` is `AWS_LAMBDA_RUNTIME_API` (`host:port`), reached over a plain socket
    /// (RuntimeAPIConnection), so that no HTTP library is loaded before the first event.
    public init(address: String, retryDelays: [Double] = RuntimeAPIClient.defaultRetryDelays,
                sleep: @escaping @Sendable (Double) -> Void = RuntimeAPIClient.sleep) {
        self.init(address: address, http: RuntimeAPIConnection(address: address), retryDelays: retryDelays, sleep: sleep)
    }

    /// The same over another HTTP client. It should be its own, not the handlers' (whose requests
    /// have timeouts that `/next` must not have).
    public init(address: String, http: any HTTPClient, retryDelays: [Double] = RuntimeAPIClient.defaultRetryDelays,
                sleep: @escaping @Sendable (Double) -> Void = RuntimeAPIClient.sleep) {
        self.baseURL = "http://\(address)/2018-06-01/runtime"
        self.http = http
        self.retryDelays = retryDelays
        self.sleep = sleep
    }

    public static let sleep: @Sendable (Double) -> Void = { seconds in
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// Blocks (no timeout) until Lambda hands over the next event.
    public func next() throws(Failure) -> Invocation {
        let response = try send(HTTPRequest(method: "GET", url: baseURL + "/invocation/next", timeout: 0,
                                            maximumResponseBytes: RuntimeAPIClient.maximumEventBytes))
        guard response.status == 200 else { throw .unusable("/invocation/next answered \(response.status)") }
        guard let requestID = response.headers["lambda-runtime-aws-request-id"], RuntimeAPIClient.isSafePathSegment(requestID) else {
            throw .unusable("/invocation/next gave no usable Lambda-Runtime-Aws-Request-Id")
        }
        // Every outgoing request's timeout is capped by the deadline: a garbled one is not guessed.
        let deadline = response.headers["lambda-runtime-deadline-ms"]
        guard deadline.map(RuntimeAPIClient.isEpochMilliseconds) ?? true else {
            throw .unusable("/invocation/next gave a Lambda-Runtime-Deadline-Ms that is not a number")
        }
        return Invocation(
            requestID: requestID,
            deadlineMilliseconds: deadline.flatMap { Int64($0) },
            invokedFunctionARN: response.headers["lambda-runtime-invoked-function-arn"],
            traceID: response.headers["lambda-runtime-trace-id"],
            event: response.body)
    }

    /// Posts the response document; returns the Runtime API's status (202 when accepted).
    @discardableResult
    public func respond(requestID: String, body: [UInt8]) throws(Failure) -> Int {
        try post("/invocation/\(requestID)/response", body: body, headers: [("Content-Type", "application/json")]).status
    }

    @discardableResult
    public func reportError(requestID: String, _ report: ErrorReport) throws(Failure) -> Int {
        try post("/invocation/\(requestID)/error", report: report).status
    }

    @discardableResult
    public func reportInitError(_ report: ErrorReport) throws(Failure) -> Int {
        try post("/init/error", report: report).status
    }

    func post(_ path: String, report: ErrorReport) throws(Failure) -> HTTPResponse {
        try post(path, body: report.body.serializedBytes(),
                 headers: [("Content-Type", "application/json"), ("Lambda-Runtime-Function-Error-Type", report.type)])
    }

    func post(_ path: String, body: [UInt8], headers: [(name: String, value: String)]) throws(Failure) -> HTTPResponse {
        try send(HTTPRequest(method: "POST", url: baseURL + path, headers: headers, body: body, timeout: 0,
                             maximumResponseBytes: 64 * 1024))
    }

    /// Retries only what a restarting peer causes (refused, reset); anything else is final.
    func send(_ request: HTTPRequest) throws(Failure) -> HTTPResponse {
        var attempt = 0
        while true {
            do {
                return try http.send(request)
            } catch {
                guard case .connection(let reason) = error else { throw .unreachable(error.description) }
                guard attempt < retryDelays.count else {
                    throw .unreachable("\(reason) (after \(attempt + 1) attempts)")
                }
                sleep(retryDelays[attempt])
                attempt += 1
            }
        }
    }

    static func isEpochMilliseconds(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 18 && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// The request id goes into a URL path: only the characters Lambda's ids use.
    static func isSafePathSegment(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128 && text.utf8.allSatisfy { $0.isASCIIAlphanumeric(or: "-_.") }
    }
}
