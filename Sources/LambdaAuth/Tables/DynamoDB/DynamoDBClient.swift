/// One call of DynamoDB's JSON protocol (`POST /`, `X-Amz-Target: DynamoDB_20120810.<Operation>`):
/// signed with SigV4, retried with backoff on what may succeed later, and every failure mapped to
/// a `TableError`.
///
/// Retried (at most `retryPolicy.maximumRetries` times): throttling, `InternalServerError`, any
/// 5xx, connection failures and timeouts, and a transaction cancelled only by a conflicting
/// transaction or throttling. Never retried: a failed condition, a cancelled
/// transaction, a validation error, rejected credentials. When retries run out the call fails
/// with `TableError.unavailable` (STORE_UNAVAILABLE, 503, retryable).
///
/// A timed-out write may have been applied; its retry then meets its own write, so a conditional
/// put can fail its condition. The flows treat a condition failure as "someone else won", which
/// is the truth from their point of view as well.
public struct DynamoDBClient: Sendable {
    public static let targetPrefix = "DynamoDB_20120810."
    static let retryableErrorTypes: Set<String> = [
        "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
        "InternalServerError", "ServiceUnavailable", "TransactionConflictException",
    ]

    /// Cancellation reasons that decide nothing (DynamoDB's TransactWriteItems documentation).
    static let retryableCancellationCodes: Set<String> = ["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"]

    public let endpoint: String
    let signer: SigV4Signer
    let http: any HTTPClient
    /// Real time for signatures: AWS refuses requests signed more than 15 minutes off, whatever
    /// clock the product logic runs on (a replay's fixed `AUTH_NOW`).
    let signingClock: any Clock
    let random: any RandomSource
    let sleeper: any Sleeper
    let retryPolicy: RetryPolicy
    let counter = RequestCounter()

    public init(endpoint: String, region: String, credentials: AWSCredentials, http: any HTTPClient,
                signingClock: any Clock = SystemClock(), random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper(), retryPolicy: RetryPolicy = .aws) {
        self.endpoint = endpoint.hasSuffix("/") ? endpoint : endpoint + "/"
        self.signer = SigV4Signer(credentials: credentials, region: region, service: "dynamodb")
        self.http = http
        self.signingClock = signingClock
        self.random = random
        self.sleeper = sleeper
        self.retryPolicy = retryPolicy
    }

    /// HTTP requests sent so far by this client, retries included.
    public var requestCount: Int { counter.value }

    public func call(_ operation: String, _ body: JSONValue) throws(TableError) -> JSONValue {
        // With nothing tolerated, a nil answer cannot happen.
        try call(operation, body, tolerating: [])!
    }

    /// As `call`, but an error of one of the `tolerated` types (`ResourceInUseException`, …)
    /// returns nil instead of throwing.
    public func call(_ operation: String, _ body: JSONValue, tolerating tolerated: Set<String>) throws(TableError) -> JSONValue? {
        var retry = 0
        while true {
            switch attempt(operation, body) {
            case .success(let response):
                return response
            case .failure(let error, let type):
                if tolerated.contains(type) { return nil }
                throw error
            case .retryable(let reason):
                guard retry < retryPolicy.maximumRetries else {
                    throw TableError.unavailable("DynamoDB \(operation) failed after \(retry + 1) attempts: \(reason)")
                }
                sleeper.sleep(seconds: retryPolicy.delay(beforeRetry: retry, random: random))
                retry += 1
            }
        }
    }

    enum Outcome {
        case success(JSONValue)
        /// `type`: DynamoDB's error type (`ConditionalCheckFailedException`), empty when none.
        case failure(TableError, type: String)
        case retryable(String)
    }

    func attempt(_ operation: String, _ body: JSONValue) -> Outcome {
        let request = HTTPRequest(
            method: "POST", url: endpoint,
            headers: [("Content-Type", "application/x-amz-json-1.0"), ("X-Amz-Target", DynamoDBClient.targetPrefix + operation)],
            body: body.serializedBytes(), timeout: 3, maximumResponseBytes: 8 << 20)
        let response: HTTPResponse
        do {
            let signed = try signer.sign(request, now: signingClock.now())
            counter.increment()
            response = try http.send(signed)
        } catch let error as SigV4Error {
            return .failure(.unavailable(error.description), type: "")
        } catch let error as HTTPClientError {
            switch error {
            case .connection, .timeout: return .retryable(error.description)
            case .responseTooLarge, .invalidURL: return .failure(.unavailable(error.description), type: "")
            case .libraryUnavailable(let reason): return .failure(.misconfigured("DynamoDB cannot be reached: \(reason)"), type: "")
            }
        } catch {
            return .failure(.unavailable(String(describing: error)), type: "")
        }

        let json = try? JSONValue.parse(response.body)
        if response.status == 200 {
            guard let json, json.objectValue != nil else {
                return .failure(.unavailable("DynamoDB \(operation) answered 200 with a body that is not a JSON object"), type: "")
            }
            return .success(json)
        }
        return DynamoDBClient.classify(status: response.status, body: json, headerType: response.headers["x-amzn-errortype"])
    }

    /// Maps an error response (`{"__type": "com.amazonaws.dynamodb.v20120810#Name", "message": …}`).
    static func classify(status: Int, body: JSONValue?, headerType: String?) -> Outcome {
        let rawType = body?["__type"]?.stringValue ?? headerType ?? ""
        let type = String(rawType.split(separator: "#").last ?? "").split(separator: ":").first.map(String.init) ?? ""
        let message = body?["message"]?.stringValue ?? body?["Message"]?.stringValue ?? ""
        let reason = "\(type.isEmpty ? "HTTP \(status)" : type)\(message.isEmpty ? "" : ": \(message)")"
        if status >= 500 || retryableErrorTypes.contains(type) { return .retryable(reason) }
        switch type {
        case "ConditionalCheckFailedException":
            return .failure(.conditionFailed, type: type)
        case "TransactionCanceledException":
            let reasons = cancellationReasons(body: body, message: message)
            // Cancelled only because another transaction held an item, or by throttling: nothing
            // was decided, so it may succeed later, like TransactionConflictException. A failed
            // condition among the reasons is a verdict and is returned as one.
            let codes = Set(reasons.map(\.code))
            if !codes.contains(CancellationReason.conditionalCheckFailed.code), !codes.isDisjoint(with: retryableCancellationCodes) {
                return .retryable(reason)
            }
            return .failure(.transactionCanceled(reasons: reasons), type: type)
        case "ValidationException", "SerializationException":
            return .failure(.invalidRequest(reason), type: type)
        default:
            return .failure(.unavailable(reason), type: type)
        }
    }

    /// `CancellationReasons` when the peer sends them (DynamoDB does); otherwise the codes listed in
    /// the message, "Transaction cancelled, please refer cancellation reasons for specific reasons
    /// [ConditionalCheckFailed, None]".
    static func cancellationReasons(body: JSONValue?, message: String) -> [CancellationReason] {
        if let reasons = body?["CancellationReasons"]?.arrayValue {
            return reasons.map { reason in
                CancellationReason(code: reason["Code"]?.stringValue ?? "None", message: reason["Message"]?.stringValue)
            }
        }
        guard let open = message.lastIndex(of: "["), let close = message.lastIndex(of: "]"), open < close else { return [] }
        return message[message.index(after: open)..<close].split(separator: ",").map { code in
            let trimmed = code.trimmingCharacters(in: " ")
            return trimmed == CancellationReason.conditionalCheckFailed.code ? .conditionalCheckFailed : CancellationReason(code: trimmed)
        }
    }
}

/// A thread-safe count, for tests and the bench (requests per flow).
final class RequestCounter: @unchecked Sendable {
    private let lock = Mutex()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
