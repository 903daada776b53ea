import Synchronization

/// One call of an AWS JSON-protocol API (`POST /`, `Content-Type: application/x-amz-json-1.0` or
/// `1.1`, `X-Amz-Target: <prefix><Operation>`), the protocol of DynamoDB, Secrets Manager and SSM:
/// signed with SigV4, retried with capped, jittered backoff on what may succeed later, and error
/// answers parsed into `AWSServiceError`. What an error means is the service client's business
/// (the DynamoDB transport hands them to LambdaAuthTables, which maps them to `TableError`).
///
/// Retried (at most `retryPolicy.maximumRetries` times): connection failures and timeouts, any
/// 5xx, the error types the service lists as retryable, and what its `isRetryable` accepts. Every
/// other error answer is returned at once as `.refused`; when retries run out, `.exhausted`.
public struct AWSJSONClient: Sendable {
    /// What differs between JSON-protocol services.
    public struct Service: Sendable {
        /// The service name in signatures: `dynamodb`, `secretsmanager`, `ssm`.
        public var signingName: String
        /// `X-Amz-Target` up to the operation: `DynamoDB_20120810.`, `secretsmanager.`, `AmazonSSM.`.
        public var targetPrefix: String
        /// `1.0` (DynamoDB) or `1.1` (most others).
        public var jsonVersion: String
        /// How messages name the service: `DynamoDB`.
        public var displayName: String
        /// Error types that say "not now" rather than "no" (throttling, a passing internal error).
        public var retryableErrorTypes: Set<String>
        /// For the answers whose type alone does not decide (DynamoDB: a cancelled transaction).
        public var isRetryable: @Sendable (AWSServiceError) -> Bool
        public var maximumResponseBytes: Int

        public init(signingName: String, targetPrefix: String, jsonVersion: String = "1.1", displayName: String,
                    retryableErrorTypes: Set<String> = AWSJSONClient.throttlingErrorTypes,
                    isRetryable: @escaping @Sendable (AWSServiceError) -> Bool = { _ in false },
                    maximumResponseBytes: Int = 1 << 20) {
            self.signingName = signingName
            self.targetPrefix = targetPrefix
            self.jsonVersion = jsonVersion
            self.displayName = displayName
            self.retryableErrorTypes = retryableErrorTypes
            self.isRetryable = isRetryable
            self.maximumResponseBytes = maximumResponseBytes
        }

        public var contentType: String { "application/x-amz-json-\(jsonVersion)" }
    }

    /// The throttling and transient error types AWS's JSON services share.
    public static let throttlingErrorTypes: Set<String> = [
        "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded",
        "InternalServerError", "InternalFailure", "InternalServiceError", "ServiceUnavailable",
    ]

    public let service: Service
    public let endpoint: String
    let signer: SigV4Signer
    let http: any HTTPClient
    /// Real time for signatures: AWS refuses requests signed more than 15 minutes off, whatever
    /// clock the product logic runs on (a replay's fixed `AUTH_NOW`).
    let signingClock: any WallClock
    let random: any RandomSource
    let sleeper: any Sleeper
    let retryPolicy: RetryPolicy
    let counter = RequestCounter()

    public init(service: Service, endpoint: String, region: String, credentials: AWSCredentials, http: any HTTPClient,
                signingClock: any WallClock = SystemClock(), random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper(), retryPolicy: RetryPolicy = .aws) {
        self.service = service
        self.endpoint = endpoint.hasSuffix("/") ? endpoint : endpoint + "/"
        self.signer = SigV4Signer(credentials: credentials, region: region, service: service.signingName)
        self.http = http
        self.signingClock = signingClock
        self.random = random
        self.sleeper = sleeper
        self.retryPolicy = retryPolicy
    }

    /// HTTP requests sent so far by this client, retries included.
    public var requestCount: Int { counter.value }

    /// The JSON object the service answered `operation` with.
    public func call(_ operation: String, _ body: JSONValue) throws(AWSCallError) -> JSONValue {
        var retry = 0
        while true {
            switch attempt(operation, body) {
            case .success(let response):
                return response
            case .failure(let error):
                throw error
            case .retryable(let reason):
                guard retry < retryPolicy.maximumRetries, InvocationDeadline.hasTimeLeft(now: signingClock.now()) else {
                    throw .exhausted("\(service.displayName) \(operation) failed after \(retry + 1) attempts: \(reason)")
                }
                sleeper.sleep(seconds: retryPolicy.delay(beforeRetry: retry, random: random))
                retry += 1
            }
        }
    }

    enum Outcome {
        case success(JSONValue)
        case failure(AWSCallError)
        case retryable(String)
    }

    func attempt(_ operation: String, _ body: JSONValue) -> Outcome {
        let request = HTTPRequest(
            method: "POST", url: endpoint,
            headers: [("Content-Type", service.contentType), ("X-Amz-Target", service.targetPrefix + operation)],
            body: body.serializedBytes(), timeout: 3, maximumResponseBytes: service.maximumResponseBytes)
        let response: HTTPResponse
        do {
            let signed = try signer.sign(request, now: signingClock.now())
            counter.increment()
            response = try http.send(signed)
        } catch let error as SigV4Error {
            return .failure(.failed(error.description))
        } catch let error as HTTPClientError {
            switch error {
            case .connection, .timeout: return .retryable(error.description)
            case .responseTooLarge, .invalidURL: return .failure(.failed(error.description))
            case .libraryUnavailable(let reason): return .failure(.misconfigured(reason))
            }
        } catch {
            return .failure(.failed(String(describing: error)))
        }

        let json = try? JSONValue.parse(response.body)
        if response.status == 200 {
            guard let json, json.objectValue != nil else {
                return .failure(.failed("\(service.displayName) \(operation) answered 200 with a body that is not a JSON object"))
            }
            return .success(json)
        }
        let error = AWSServiceError(status: response.status, body: json, headerType: response.headers["x-amzn-errortype"])
        if error.status >= 500 || service.retryableErrorTypes.contains(error.type) || service.isRetryable(error) {
            return .retryable(error.description)
        }
        return .failure(.refused(error))
    }
}

/// An error answer of a JSON-protocol service:
/// `{"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "message": …}`,
/// or only an `x-amzn-ErrorType: Name:http://…` header, or neither (a proxy's HTML page).
public struct AWSServiceError: Error, Sendable, CustomStringConvertible {
    public let status: Int
    /// The error's name without namespace or URL (`ConditionalCheckFailedException`); empty when
    /// the answer names none.
    public let type: String
    public let message: String
    /// The parsed body, for what some errors carry besides (DynamoDB's `CancellationReasons`).
    public let body: JSONValue?

    public init(status: Int, body: JSONValue?, headerType: String?) {
        self.status = status
        self.body = body
        let rawType = body?["__type"]?.stringValue ?? headerType ?? ""
        type = String(rawType.split(separator: "#").last ?? "").split(separator: ":").first.map(String.init) ?? ""
        message = body?["message"]?.stringValue ?? body?["Message"]?.stringValue ?? ""
    }

    /// `Type: message`, or `HTTP 503` when the answer names no type.
    public var description: String {
        "\(type.isEmpty ? "HTTP \(status)" : type)\(message.isEmpty ? "" : ": \(message)")"
    }
}

/// Why a JSON-protocol call produced no answer.
public enum AWSCallError: Error, Sendable, CustomStringConvertible {
    /// The service said no, and asking again would not change that.
    case refused(AWSServiceError)
    /// Every attempt met something that may pass (throttling, 5xx, no connection); the message
    /// names the operation, the number of attempts and the last reason.
    case exhausted(String)
    /// Not sent or not understood: signing failed, the URL is invalid, the answer was too large
    /// or not a JSON object.
    case failed(String)
    /// This machine cannot make the call at all (the HTTP library is missing): no retry helps.
    case misconfigured(String)

    public var description: String {
        switch self {
        case .refused(let error): return error.description
        case .exhausted(let reason), .failed(let reason), .misconfigured(let reason): return reason
        }
    }
}

/// A thread-safe count, for tests and the bench (requests per flow).
final class RequestCounter: Sendable {
    private let count = Mutex(0)

    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
