import LambdaAuthVerifier

/// How `DynamoDBClient` reaches DynamoDB: one JSON-protocol call, signed, sent and retried by
/// whoever opens the table (the product gives its AWS client: SigV4, libcurl, backoff). Kept a
/// protocol so that the tables know no credentials, signing or HTTP.
public protocol DynamoDBTransport: Sendable {
    /// Where the calls go.
    var endpoint: String { get }
    /// HTTP requests sent so far, retries included (tests and the bench count them).
    var requestCount: Int { get }
    /// The JSON object DynamoDB answered `operation` with. Retries what may succeed later,
    /// DynamoDB's own rules included (`DynamoDBClient.retryableErrorTypes`,
    /// `DynamoDBClient.isUndecidedCancellation`).
    func call(_ operation: String, _ body: JSONValue) throws(DynamoDBTransportError) -> JSONValue
}

/// Why a call produced no answer.
public enum DynamoDBTransportError: Error, Sendable {
    /// DynamoDB said no, and asking again would not change that.
    case refused(DynamoDBRefusal)
    /// Not answered: retries ran out, or the request could not be sent or its answer understood.
    case unavailable(String)
    /// This machine cannot make the call at all (the HTTP library is missing): no retry helps.
    case misconfigured(String)
}

/// An error answer of DynamoDB.
public struct DynamoDBRefusal: Sendable {
    /// The error's name without namespace (`ConditionalCheckFailedException`); empty when the
    /// answer names none.
    public var type: String
    public var message: String
    /// The parsed body, for what some errors carry besides (`CancellationReasons`).
    public var body: JSONValue?
    /// How messages name the refusal: `Type: message`.
    public var description: String

    public init(type: String, message: String, body: JSONValue?, description: String) {
        self.type = type
        self.message = message
        self.body = body
        self.description = description
    }
}
