import LambdaAuth
import Synchronization

/// A table in front of another that records every request a flow makes (named as DynamoDB names
/// its operations, so in-process counts read like the DynamoDB proxy's) and can refuse queries on
/// an index: the in-process stand-in for a DynamoDB whose GSI1 answers stale, since a flow that
/// never queries the index cannot be misled by it.
public final class RecordingTable: Table, Sendable {
    public let base: any Table
    public let refusedIndex: String?
    private let recorded = Mutex<[String]>([])

    public init(_ base: any Table, refusingQueriesOn refusedIndex: String? = nil) {
        self.base = base
        self.refusedIndex = refusedIndex
    }

    /// Every operation so far, in order; a query on an index as `Query(<index>)`.
    public var operations: [String] { recorded.withLock { $0 } }

    /// The operations since the last call, and a fresh start for the next count.
    public func takeOperations() -> [String] {
        recorded.withLock { recorded in
            defer { recorded.removeAll() }
            return recorded
        }
    }

    private func note(_ operation: String) { recorded.withLock { $0.append(operation) } }

    public func getItem(_ key: TableKey) throws(TableError) -> Item? {
        note("GetItem")
        return try base.getItem(key)
    }

    public func putItem(_ item: Item, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        note("PutItem")
        try base.putItem(item, condition: condition, attributes: attributes)
    }

    public func updateItem(_ key: TableKey, update: String, condition: String?, attributes: ExpressionAttributes,
                           returnValues: ReturnValues) throws(TableError) -> Item? {
        note("UpdateItem")
        return try base.updateItem(key, update: update, condition: condition, attributes: attributes, returnValues: returnValues)
    }

    public func deleteItem(_ key: TableKey, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        note("DeleteItem")
        try base.deleteItem(key, condition: condition, attributes: attributes)
    }

    public func query(_ request: QueryRequest) throws(TableError) -> QueryPage {
        guard let index = request.indexName else {
            note("Query")
            return try base.query(request)
        }
        note("Query(\(index))")
        if index == refusedIndex { throw .unavailable("this test refuses queries on \(index): they may be stale") }
        return try base.query(request)
    }

    public func transactWrite(_ actions: [TransactWriteAction]) throws(TableError) {
        note("TransactWriteItems")
        try base.transactWrite(actions)
    }

    public func scan(limit: Int?, exclusiveStartKey: Item?) throws(TableError) -> QueryPage {
        note("Scan")
        return try base.scan(limit: limit, exclusiveStartKey: exclusiveStartKey)
    }

    /// Forwarded: the protocol's default does nothing, which would leave a wrapped local store's
    /// log holding what a deletion removed. Not noted: DynamoDB gets no request for it.
    public func eraseDeletedItems() throws(TableError) {
        try base.eraseDeletedItems()
    }
}
