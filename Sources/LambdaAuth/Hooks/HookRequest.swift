import Synchronization

/// The request hooks are called for: what their payload says of it (`requestId`, `sourceIp`) and
/// the ledger the event line reads which hooks ran from.
struct HookRequest: Sendable {
    var requestID: String
    var sourceIP: String?
    var ledger: HookLedger

    init(requestID: String = "", sourceIP: String? = nil, ledger: HookLedger = HookLedger()) {
        self.requestID = requestID
        self.sourceIP = sourceIP
        self.ledger = ledger
    }

    /// An HTTP event's source address (never a direct invocation's: no client is behind it).
    init(_ request: InvocationRequest, context: InvocationContext) {
        self.init(requestID: context.requestID, sourceIP: request.kind.isHTTP ? request.sourceIP : nil, ledger: context.hooks)
    }
}

/// The hooks one request called and how long they took: the event line's `hook` and `hookMs`, and
/// the EMF `hookDuration` (contract section 19). One per invocation context.
public final class HookLedger: Sendable {
    private let calls = Mutex<[(hook: HookType, milliseconds: Double)]>([])

    public init() {}

    func record(_ hook: HookType, milliseconds: Double) {
        calls.withLock { $0.append((hook, milliseconds)) }
    }

    /// The hooks called, in order, comma-separated; nil when none was.
    public var names: String? {
        let called = calls.withLock { $0.map(\.hook.rawValue) }
        return called.isEmpty ? nil : called.joined(separator: ",")
    }

    /// The time spent in hook calls, nil when none was made.
    public var milliseconds: Double? {
        calls.withLock { calls in calls.isEmpty ? nil : calls.reduce(0) { total, call in total + call.milliseconds } }
    }
}
