/// `#name` and `:value` placeholders shared by the expressions of one request, as in DynamoDB.
public struct ExpressionAttributes: Sendable, Equatable {
    public var names: [String: String]
    public var values: [String: AttributeValue]

    public init(names: [String: String] = [:], values: [String: AttributeValue] = [:]) {
        self.names = names
        self.values = values
    }
}

public enum ReturnValues: Sendable { case none, allOld, allNew }

public struct QueryRequest: Sendable {
    /// nil: the table's primary key; "GSI1": the global secondary index on GSI1PK / GSI1SK.
    public var indexName: String?
    /// e.g. `PK = :pk AND begins_with(SK, :prefix)`.
    public var keyCondition: String
    public var attributes: ExpressionAttributes
    public var scanIndexForward: Bool
    public var limit: Int?
    public var exclusiveStartKey: Item?
    /// Items past their `ttl` are returned too, as stored: for a deletion that must leave none of
    /// them behind (the sweeper may take days), never for a read that decides what a flow answers.
    public var includingExpired: Bool

    public init(indexName: String? = nil, keyCondition: String, attributes: ExpressionAttributes = .init(),
                scanIndexForward: Bool = true, limit: Int? = nil, exclusiveStartKey: Item? = nil, includingExpired: Bool = false) {
        self.indexName = indexName
        self.keyCondition = keyCondition
        self.attributes = attributes
        self.scanIndexForward = scanIndexForward
        self.limit = limit
        self.exclusiveStartKey = exclusiveStartKey
        self.includingExpired = includingExpired
    }
}

public struct QueryPage: Sendable {
    public var items: [Item]
    /// Present when more items may follow; pass it back as `exclusiveStartKey`.
    public var lastEvaluatedKey: Item?

    public init(items: [Item], lastEvaluatedKey: Item?) {
        self.items = items
        self.lastEvaluatedKey = lastEvaluatedKey
    }
}

/// One action of `transactWrite` (DynamoDB TransactWriteItems).
public enum TransactWriteAction: Sendable {
    case put(Item, condition: String? = nil, attributes: ExpressionAttributes = .init())
    case update(key: TableKey, update: String, condition: String? = nil, attributes: ExpressionAttributes = .init())
    case delete(key: TableKey, condition: String? = nil, attributes: ExpressionAttributes = .init())
    case conditionCheck(key: TableKey, condition: String, attributes: ExpressionAttributes = .init())
}

/// Why one action of a cancelled transaction failed, in DynamoDB's terms.
public struct CancellationReason: Sendable, Equatable {
    /// `None`, `ConditionalCheckFailed`, `TransactionConflict`, `ValidationError`, …
    public var code: String
    public var message: String?

    public init(code: String, message: String? = nil) {
        self.code = code
        self.message = message
    }

    public static let none = CancellationReason(code: "None")
    public static let conditionalCheckFailed = CancellationReason(code: "ConditionalCheckFailed", message: "The conditional request failed")
}

public enum TableError: Error, Sendable, CustomStringConvertible {
    /// A write's condition evaluated to false; nothing was written.
    case conditionFailed
    /// A transaction was cancelled as a whole; one reason per action, in order.
    case transactionCanceled(reasons: [CancellationReason])
    /// The store cannot be read or written now (lock timeout, I/O error, throttling, network).
    case unavailable(String)
    /// The request itself is invalid (an expression outside the supported subset, a bad key).
    case invalidRequest(String)
    /// Stored data failed validation; names the damaged file or item.
    case corrupted(String)
    /// The machine cannot reach the store at all (the HTTP library is missing): no retry helps.
    case misconfigured(String)

    public var description: String {
        switch self {
        case .conditionFailed: return "the conditional request failed"
        case .transactionCanceled(let reasons):
            return "transaction cancelled [\(reasons.map(\.code).joined(separator: ", "))]"
        case .unavailable(let reason): return "store unavailable: \(reason)"
        case .invalidRequest(let reason): return "invalid table request: \(reason)"
        case .corrupted(let reason): return "store corrupted: \(reason)"
        case .misconfigured(let reason): return "store misconfigured: \(reason)"
        }
    }
}

/// The DynamoDB-shaped table the flows run on. Two implementations: the local JSON store and the
/// DynamoDB client; both pass the same conformance suite. Calls are synchronous: a handler serves
/// one invocation at a time, and both backends block on I/O anyway.
///
/// Items whose `ttl` (epoch seconds) is in the past are invisible to every read and condition.
public protocol Table: Sendable {
    func getItem(_ key: TableKey) throws(TableError) -> Item?
    func putItem(_ item: Item, condition: String?, attributes: ExpressionAttributes) throws(TableError)
    @discardableResult
    func updateItem(_ key: TableKey, update: String, condition: String?, attributes: ExpressionAttributes,
                    returnValues: ReturnValues) throws(TableError) -> Item?
    func deleteItem(_ key: TableKey, condition: String?, attributes: ExpressionAttributes) throws(TableError)
    func query(_ request: QueryRequest) throws(TableError) -> QueryPage
    /// Up to 100 actions, all or nothing.
    func transactWrite(_ actions: [TransactWriteAction]) throws(TableError)
    /// Every item, in no particular order, a page at a time (authctl's scan and export).
    func scan(limit: Int?, exclusiveStartKey: Item?) throws(TableError) -> QueryPage
    /// Called once a deletion of personal data, or a rewrite of sealed values, committed:
    /// afterwards no byte of the deleted items, nor of what rewritten items held before, may
    /// remain in the table's storage (contract section 13). DynamoDB's writes are that already;
    /// the local store checkpoints and cuts its log back.
    func eraseDeletedItems() throws(TableError)
}

extension Table {
    public func eraseDeletedItems() throws(TableError) {}

    public func putItem(_ item: Item) throws(TableError) {
        try putItem(item, condition: nil, attributes: .init())
    }

    public func deleteItem(_ key: TableKey) throws(TableError) {
        try deleteItem(key, condition: nil, attributes: .init())
    }
}
