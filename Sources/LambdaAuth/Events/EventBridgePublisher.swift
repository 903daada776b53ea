import Logging

/// EventBridge `PutEvents` (JSON 1.1, `AWSEvents.PutEvents`) for the events of one stream batch,
/// with the ordering and retry rules of contract section 22:
/// - at most 10 entries a call; a user's entries go in their stream order, and a user's later
///   entries are not sent while an earlier one is unconfirmed (a failed entry stops that user);
/// - entries that fail are retried within the invocation (3 retries, jittered backoff), and what
///   still fails is left for Lambda to redeliver: the earliest such record is reported.
public struct EventBridgePublisher: Sendable {
    public static let service = AWSJSONClient.Service(
        signingName: "events", targetPrefix: "AWSEvents.", jsonVersion: "1.1", displayName: "EventBridge")
    /// EventBridge's limit per call.
    static let entriesPerCall = 10
    static let maximumRetries = 3

    /// `Source` of every entry (contract section 22); the CloudEvent's own `source` is AUTH_ISSUER.
    public static let entrySource = "lambda-auth"

    let client: AWSJSONClient
    /// `AUTH_EVENT_BUS`: a name or an ARN.
    let bus: String
    let random: any RandomSource
    let sleeper: any Sleeper

    public init(client: AWSJSONClient, bus: String, random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper()) {
        self.client = client
        self.bus = bus
        self.random = random
        self.sleeper = sleeper
    }

    /// One event to deliver, with the stream record it came from.
    public struct Pending: Sendable {
        public var event: AuthEvent
        public var sequenceNumber: String

        public init(event: AuthEvent, sequenceNumber: String) {
            self.event = event
            self.sequenceNumber = sequenceNumber
        }
    }

    public struct Outcome: Sendable, Equatable {
        public var delivered: Int
        /// Indices (into the `pending` given) of the first entry of each user that could not be
        /// delivered; the user's later entries were not sent.
        public var undelivered: [Int]
        public var calls: Int
    }

    /// Delivers `pending` (in stream order).
    public func deliver(_ pending: [Pending], logger: Logger) -> Outcome {
        // Each user's entries, as indices into `pending`, in stream order.
        var queues: [String: [Int]] = [:]
        var users: [String] = []
        for (index, entry) in pending.enumerated() {
            if queues[entry.event.subject] == nil { users.append(entry.event.subject) }
            queues[entry.event.subject, default: []].append(index)
        }
        var next: [String: Int] = [:]
        var failures: [String: Int] = [:]
        var stopped: [Int] = []
        var delivered = 0, calls = 0, retryRound = 0
        while true {
            // The next call: each live user's next entries in turn, until 10.
            var call: [Int] = []
            for user in users where failures[user, default: 0] <= EventBridgePublisher.maximumRetries {
                let queue = queues[user]!
                var position = next[user, default: 0]
                while position < queue.count, call.count < EventBridgePublisher.entriesPerCall {
                    call.append(queue[position])
                    position += 1
                }
                if call.count == EventBridgePublisher.entriesPerCall { break }
            }
            guard !call.isEmpty else { break }
            calls += 1
            let failed = put(call.map { pending[$0] }, logger: logger)
            var sawFailure = false
            // Per user: confirmed up to its first failed entry; the rest of its entries go again.
            var confirmedThisCall: [String: Int] = [:]
            var userFailed: Set<String> = []
            for (offset, index) in call.enumerated() {
                let user = pending[index].event.subject
                if userFailed.contains(user) { continue }
                if failed.contains(offset) {
                    userFailed.insert(user)
                    sawFailure = true
                    failures[user, default: 0] += 1
                    if failures[user]! > EventBridgePublisher.maximumRetries { stopped.append(index) }
                } else {
                    confirmedThisCall[user, default: 0] += 1
                }
            }
            for (user, count) in confirmedThisCall {
                next[user, default: 0] += count
                delivered += count
            }
            if sawFailure {
                sleeper.sleep(seconds: RetryPolicy.aws.delay(beforeRetry: retryRound, random: random))
                retryRound += 1
            }
            if !InvocationDeadline.hasTimeLeft(now: SystemClock().now()) {
                // Out of time: whatever is left goes back to Lambda.
                for user in users where failures[user, default: 0] <= EventBridgePublisher.maximumRetries {
                    let queue = queues[user]!
                    if next[user, default: 0] < queue.count { stopped.append(queue[next[user, default: 0]]) }
                }
                break
            }
        }
        return Outcome(delivered: delivered, undelivered: stopped.sorted(), calls: calls)
    }

    /// One PutEvents call: the offsets (into `entries`) that failed. A call that failed as a
    /// whole (after the client's own retries) fails every entry.
    func put(_ entries: [Pending], logger: Logger) -> Set<Int> {
        let body: JSONValue = ["Entries": .array(entries.map { entry in
            [
                "Source": .string(EventBridgePublisher.entrySource), "DetailType": .string(entry.event.type.rawValue),
                "Detail": .string(entry.event.json.serialized()), "EventBusName": .string(bus),
            ]
        })]
        do {
            let answer = try client.call("PutEvents", body)
            guard (answer["FailedEntryCount"]?.int64Value ?? 0) > 0 else { return [] }
            var failed: Set<Int> = []
            for (offset, result) in (answer["Entries"]?.arrayValue ?? []).enumerated() where result["ErrorCode"] != nil {
                failed.insert(offset)
                logger.warning("an event was not accepted", metadata: [
                    "eventId": .string(entries[offset].event.id), "errorCode": .string(result["ErrorCode"]?.stringValue ?? ""),
                ])
            }
            // A count without per-entry results: nothing can be told apart, so all go again.
            return failed.isEmpty ? Set(entries.indices) : failed
        } catch {
            logger.warning("PutEvents failed", metadata: ["reason": .string(error.description)])
            return Set(entries.indices)
        }
    }
}
