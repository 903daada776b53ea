import Logging

/// `events`: a batch of the table's DynamoDB Stream (`{"Records": [...]}`, new and old images)
/// in, one CloudEvent per meaningful change out through EventBridge (contract section 22); the
/// answer is Lambda's partial batch response, `{"batchItemFailures": [{"itemIdentifier": <the
/// sequence number Lambda retries from>}]}`, empty when everything was delivered.
///
/// It needs no table, key or secret: only the bus, the issuer and AWS credentials, read from the
/// environment (its role may do nothing but `events:PutEvents` on the bus).
public struct EventsHandler: RequestHandler {
    let options: ItemEvents.Options
    let publisher: EventBridgePublisher

    public init(options: ItemEvents.Options, publisher: EventBridgePublisher) {
        self.options = options
        self.publisher = publisher
    }

    /// `AUTH_EVENT_BUS` (required), `AUTH_ISSUER`, `AUTH_EVENTS_INCLUDE_EMAIL`, `AWS_REGION`,
    /// the `AWS_*` credentials and `AWS_ENDPOINT_URL_EVENTS` (moto, a proxy).
    public static func fromEnvironment(_ environment: [String: String], http: any HTTPClient = CurlHTTPClient(),
                                       sleeper: any Sleeper = SystemSleeper()) throws(AuthError) -> EventsHandler {
        let reader = EnvironmentReader(environment)
        let options = ItemEvents.Options(source: reader.string("AUTH_ISSUER") ?? AuthConfiguration.defaultIssuer,
                                         includeEmail: try reader.bool("AUTH_EVENTS_INCLUDE_EMAIL") ?? false)
        return try EventsHandler(bus: reader.string("AUTH_EVENT_BUS"), options: options,
                                 region: AWSEnvironment.region(reader), credentials: AWSEnvironment.credentials(reader),
                                 endpoint: try reader.url("AWS_ENDPOINT_URL_EVENTS"), http: http, sleeper: sleeper)
    }

    /// The handler, or where its settings are missing or invalid (no bus: serve, the tests, a
    /// deployment that forgot one) a handler answering each invocation with that CONFIG_ERROR.
    /// Not a failed start: like every handler, the process reaches the Runtime API's `/next`
    /// and says what is wrong to whoever invokes it.
    static func orUnconfigured(_ make: () throws(AuthError) -> EventsHandler) -> any RequestHandler {
        do {
            return try make()
        } catch {
            return Unconfigured(error: error)
        }
    }

    /// Each invocation answers the CONFIG_ERROR. A stream batch's answer also reports its first
    /// record as failed: Lambda reads an answer without `batchItemFailures` as the whole batch
    /// delivered and would move past it, so this keeps the batch in the stream, retried until
    /// the setting is fixed (or, past the mapping's limits, its records go to the on-failure queue).
    struct Unconfigured: RequestHandler {
        let error: AuthError

        func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
            guard let first = request.body["Records"]?.arrayValue?.first?["dynamodb"]?["SequenceNumber"]?.stringValue else { throw error }
            context.logger.error("\(error.message)", metadata: ["code": .string(error.code.rawValue), "retried": .string(first)])
            var response = InvocationResponse(error: error)
            if case .object(var body) = response.body {
                body["batchItemFailures"] = [["itemIdentifier": .string(first)]]
                response.body = .object(body)
            }
            return response
        }
    }

    /// From a process's services (serve, the tests): the same settings, read by the configuration.
    public init(configuration: AuthConfiguration, http: any HTTPClient) throws(AuthError) {
        try self.init(bus: configuration.eventBus,
                      options: ItemEvents.Options(source: configuration.issuer, includeEmail: configuration.eventsIncludeEmail),
                      region: configuration.awsRegion, credentials: configuration.awsCredentials,
                      endpoint: configuration.eventsEndpoint, http: http, sleeper: SystemSleeper())
    }

    init(bus: String?, options: ItemEvents.Options, region: String?, credentials: AWSCredentials?, endpoint: String?,
         http: any HTTPClient, sleeper: any Sleeper) throws(AuthError) {
        guard let bus else {
            throw AuthConfiguration.configError("AUTH_EVENT_BUS", "is required by events (the EventBridge bus name or ARN)")
        }
        guard let region else { throw AuthError(.configError, "AWS_REGION is required with events") }
        guard let credentials else {
            throw AuthError(.configError, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required with events")
        }
        let client = AWSJSONClient(service: EventBridgePublisher.service, endpoint: endpoint ?? "https://events.\(region).amazonaws.com",
                                   region: region, credentials: credentials, http: http, sleeper: sleeper)
        self.init(options: options, publisher: EventBridgePublisher(client: client, bus: bus, sleeper: sleeper))
    }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        guard let records = request.body["Records"]?.arrayValue else {
            throw AuthError(.invalidRequest, "events takes a DynamoDB Stream batch: {\"Records\": [...]}")
        }
        var pending: [EventBridgePublisher.Pending] = []
        for record in records {
            do {
                let change = try ItemChange(streamRecord: record)
                if let event = ItemEvents.event(for: change, options: options) {
                    pending.append(EventBridgePublisher.Pending(event: event, sequenceNumber: change.sequenceNumber))
                }
            } catch {
                // Retrying cannot make it readable, and holding it back would stall the shard for
                // good: it is logged (never its images) and passed over.
                context.logger.error("a stream record could not be read; it publishes nothing",
                                     metadata: ["reason": .string(error.description), "eventID": .string(record["eventID"]?.stringValue ?? "")])
            }
        }
        let outcome = publisher.deliver(pending, logger: context.logger)
        // Lambda retries a stream batch from the lowest sequence number reported, so the earliest
        // undelivered record is the one that matters: everything after it comes again.
        let failures: [JSONValue] = outcome.undelivered.first.map { [["itemIdentifier": .string(pending[$0].sequenceNumber)]] } ?? []
        context.logger.info("events published", metadata: [
            "records": .number(Int64(records.count)), "events": .number(Int64(pending.count)),
            "delivered": .number(Int64(outcome.delivered)), "calls": .number(Int64(outcome.calls)),
            "undelivered": .number(Int64(outcome.undelivered.count)),
        ])
        return InvocationResponse(body: ["batchItemFailures": .array(failures)])
    }
}
