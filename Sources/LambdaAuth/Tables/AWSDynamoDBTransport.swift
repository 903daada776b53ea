/// DynamoDB over the product's AWS JSON-protocol client (SigV4, libcurl, retries with jittered
/// backoff): the transport `DynamoDBClient` is given, with DynamoDB's retry rules, which the
/// tables decide.
struct AWSDynamoDBTransport: DynamoDBTransport {
    static let service = AWSJSONClient.Service(
        signingName: "dynamodb", targetPrefix: DynamoDBClient.targetPrefix, jsonVersion: "1.0", displayName: "DynamoDB",
        retryableErrorTypes: DynamoDBClient.retryableErrorTypes,
        isRetryable: { DynamoDBClient.isUndecidedCancellation(AWSDynamoDBTransport.refusal($0)) },
        maximumResponseBytes: DynamoDBClient.maximumResponseBytes)

    let client: AWSJSONClient

    var endpoint: String { client.endpoint }
    var requestCount: Int { client.requestCount }

    func call(_ operation: String, _ body: JSONValue) throws(DynamoDBTransportError) -> JSONValue {
        do {
            return try client.call(operation, body)
        } catch {
            switch error {
            case .refused(let answer): throw .refused(AWSDynamoDBTransport.refusal(answer))
            case .exhausted(let reason), .failed(let reason): throw .unavailable(reason)
            case .misconfigured(let reason): throw .misconfigured(reason)
            }
        }
    }

    static func refusal(_ answer: AWSServiceError) -> DynamoDBRefusal {
        DynamoDBRefusal(type: answer.type, message: answer.message, body: answer.body, description: answer.description)
    }
}

extension DynamoDBClient {
    /// DynamoDB at `endpoint`, signed with `credentials` for `region`.
    public init(endpoint: String, region: String, credentials: AWSCredentials, http: any HTTPClient,
                signingClock: any WallClock = SystemClock(), random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper(), retryPolicy: RetryPolicy = .aws) {
        self.init(transport: AWSDynamoDBTransport(client: AWSJSONClient(
            service: AWSDynamoDBTransport.service, endpoint: endpoint, region: region, credentials: credentials, http: http,
            signingClock: signingClock, random: random, sleeper: sleeper, retryPolicy: retryPolicy)))
    }
}
