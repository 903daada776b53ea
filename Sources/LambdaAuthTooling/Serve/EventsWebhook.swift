import LambdaAuth
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// `serve`'s side of contract section 22 on the local store: every event of the change log
/// committed after `serve` started, POSTed to `AUTH_EVENTS_WEBHOOK` in commit order, signed as
/// Standard Webhooks sign (contract section 19): `webhook-id` (the event's id, so a receiver
/// deduplicates redeliveries as it would EventBridge's), `webhook-timestamp`, and
/// `webhook-signature` = `v1,` + base64 HMAC-SHA256 over `id.timestamp.body` under `AUTH_HOOK_SECRET`.
///
/// It polls the change log (a commit by any process shows there once acknowledged), so it sits
/// beside the request path and never delays an answer.
public final class EventsWebhook: Sendable {
    let url: String
    let secret: [UInt8]?
    let table: LocalTable
    let options: ItemEvents.Options
    let http: any HTTPClient
    let logger: Logger
    let interval: Double

    public init(url: String, secret: [UInt8]?, table: LocalTable, options: ItemEvents.Options,
                http: any HTTPClient = CurlHTTPClient(), logger: Logger = Logger.jsonLines(level: .warning),
                interval: Double = 0.2) {
        self.url = url
        self.secret = secret
        self.table = table
        self.options = options
        self.http = http
        self.logger = logger
        self.interval = interval
    }

    /// Starts posting on a background thread, from the change log's current end.
    public func start() throws {
        let start = try table.changeRecords().last?.orderingKey
        BackgroundThread.detach { [self] in self.run(after: start) }
    }

    func run(after start: String?) {
        var last = start
        while true {
            if let changes = try? table.changeRecords() {
                for change in changes where last.map({ change.orderingKey > $0 }) ?? true {
                    last = change.orderingKey
                    if let event = ItemEvents.event(for: change, options: options) { post(event) }
                }
            }
            usleep(UInt32(interval * 1_000_000))
        }
    }

    /// Tries three times, a second apart, then logs and goes on: a receiver that is down for
    /// longer misses events, as the log says (the change log still holds them for `events tail`).
    func post(_ event: AuthEvent) {
        let body = event.json.serializedBytes()
        for attempt in 1...3 {
            let timestamp = String(Int64(SystemClock().now()))
            var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("webhook-id", event.id),
                                                            ("webhook-timestamp", timestamp)]
            if let secret {
                headers.append(("webhook-signature", EventsWebhook.signature(id: event.id, timestamp: timestamp, body: body, secret: secret)))
            }
            let request = HTTPRequest(method: "POST", url: url, headers: headers, body: body, timeout: 5, maximumResponseBytes: 64 << 10)
            if let response = try? http.send(request), (200..<300).contains(response.status) { return }
            if attempt < 3 { sleep(1) }
        }
        logger.warning("the events webhook did not accept an event", metadata: ["eventId": .string(event.id), "type": .string(event.type.rawValue)])
    }

    /// Standard Webhooks' `v1` signature, as the app's URL hooks are signed.
    public static func signature(id: String, timestamp: String, body: [UInt8], secret: [UInt8]) -> String {
        StandardWebhookSignature.v1(id: id, timestamp: timestamp, body: body, secret: secret)
    }
}
