import LambdaAuthVerifier

/// DynamoDB's JSON protocol (`X-Amz-Target: DynamoDB_20120810.<Operation>`) over an injected
/// transport, with DynamoDB's answers mapped to `TableError`. Signing, HTTP and retries with
/// backoff are the transport's (the product's AWS JSON-protocol client): this target holds no
/// credentials and sends nothing itself. What DynamoDB means by its answers is decided here,
/// the retry rules included, which the transport applies (`retryableErrorTypes`,
/// `isUndecidedCancellation`).
///
/// Retried besides what every JSON service retries: provisioned-throughput errors, a conflicting
/// transaction, and a transaction cancelled only by a conflicting transaction or throttling.
/// Never retried: a failed condition, a cancelled transaction, a validation error, rejected
/// credentials. When retries run out the call fails with `TableError.unavailable`
/// (STORE_UNAVAILABLE, 503, retryable).
///
/// A timed-out write may have been applied; its retry then meets its own write, so a conditional
/// put can fail its condition. The flows treat a condition failure as "someone else won", which
/// is the truth from their point of view as well.
public struct DynamoDBClient: Sendable {
    public static let targetPrefix = "DynamoDB_20120810."
    /// The error types that say "not now" rather than "no", for the transport's retries.
    public static let retryableErrorTypes: Set<String> = [
        "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
        "InternalServerError", "ServiceUnavailable", "TransactionConflictException",
    ]
    /// DynamoDB's answers are larger than most services' (a page of a query: up to 1 MB of items
    /// in DynamoDB JSON).
    public static let maximumResponseBytes = 8 << 20

    /// Cancellation reasons that decide nothing (DynamoDB's TransactWriteItems documentation).
    static let retryableCancellationCodes: Set<String> = ["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"]

    public let transport: any DynamoDBTransport

    public init(transport: any DynamoDBTransport) {
        self.transport = transport
    }

    public var endpoint: String { transport.endpoint }

    /// HTTP requests sent so far by this client, retries included.
    public var requestCount: Int { transport.requestCount }

    public func call(_ operation: String, _ body: JSONValue) throws(TableError) -> JSONValue {
        // With nothing tolerated, a nil answer cannot happen.
        try call(operation, body, tolerating: [])!
    }

    /// As `call`, but an error of one of the `tolerated` types (`ResourceInUseException`, …)
    /// returns nil instead of throwing.
    public func call(_ operation: String, _ body: JSONValue, tolerating tolerated: Set<String>) throws(TableError) -> JSONValue? {
        do {
            return try transport.call(operation, body)
        } catch {
            switch error {
            case .refused(let answer):
                if tolerated.contains(answer.type) { return nil }
                throw DynamoDBClient.tableError(answer)
            case .unavailable(let reason):
                throw .unavailable(reason)
            case .misconfigured(let reason):
                throw .misconfigured("DynamoDB cannot be reached: \(reason)")
            }
        }
    }

    /// What a refusal means to the table.
    static func tableError(_ answer: DynamoDBRefusal) -> TableError {
        switch answer.type {
        case "ConditionalCheckFailedException":
            return .conditionFailed
        case "TransactionCanceledException":
            return .transactionCanceled(reasons: cancellationReasons(body: answer.body, message: answer.message))
        case "ValidationException", "SerializationException":
            return .invalidRequest(answer.description)
        default:
            return .unavailable(answer.description)
        }
    }

    /// A transaction cancelled only because another transaction held an item, or by throttling:
    /// nothing was decided, so it may succeed later, like TransactionConflictException. A failed
    /// condition among the reasons is a verdict and is returned as one.
    @Sendable public static func isUndecidedCancellation(_ answer: DynamoDBRefusal) -> Bool {
        guard answer.type == "TransactionCanceledException" else { return false }
        let codes = Set(cancellationReasons(body: answer.body, message: answer.message).map(\.code))
        return !codes.contains(CancellationReason.conditionalCheckFailed.code) && !codes.isDisjoint(with: retryableCancellationCodes)
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
