import LambdaAuthVerifier

/// The `Table` interface over Amazon DynamoDB, with the same expression strings as the local
/// store.
///
/// Expired items: DynamoDB keeps an item past its `ttl` until its sweeper deletes it (often hours
/// later). Every read here (get, query, scan, returned attributes) drops items whose `ttl` is
/// before the injected clock's now, so both backends read alike. Conditions are evaluated by
/// DynamoDB itself and still see such unswept items: a write conditioned on
/// `attribute_not_exists(PK)` fails against an expired item that has not been swept yet. The
/// flows never reuse the key of an item that expires (new ids every time), so this only matters
/// to code that would.
public struct DynamoDBTable: Table {
    public let tableName: String
    public let client: DynamoDBClient
    /// The product clock (fixed in replays), used only to hide expired items.
    let clock: any WallClock

    public init(tableName: String, client: DynamoDBClient, clock: any WallClock) {
        self.tableName = tableName
        self.client = client
        self.clock = clock
    }

    // MARK: - Table

    public func getItem(_ key: TableKey) throws(TableError) -> Item? {
        let response = try client.call("GetItem", [
            "TableName": .string(tableName), "Key": DynamoJSON.encode(key.item), "ConsistentRead": true,
        ])
        guard let item = response["Item"] else { return nil }
        return try visible(decode(item))
    }

    public func putItem(_ item: Item, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        var body: [String: JSONValue] = ["TableName": .string(tableName), "Item": DynamoJSON.encode(item)]
        try DynamoDBTable.addExpressions(to: &body, [("ConditionExpression", condition)], attributes)
        _ = try client.call("PutItem", .object(body))
    }

    @discardableResult
    public func updateItem(_ key: TableKey, update: String, condition: String?, attributes: ExpressionAttributes,
                           returnValues: ReturnValues) throws(TableError) -> Item? {
        var body: [String: JSONValue] = ["TableName": .string(tableName), "Key": DynamoJSON.encode(key.item)]
        try DynamoDBTable.addExpressions(to: &body, [("UpdateExpression", update), ("ConditionExpression", condition)], attributes)
        switch returnValues {
        case .none: body["ReturnValues"] = "NONE"
        case .allOld: body["ReturnValues"] = "ALL_OLD"
        case .allNew: body["ReturnValues"] = "ALL_NEW"
        }
        let response = try client.call("UpdateItem", .object(body))
        guard returnValues != .none, let attributes = response["Attributes"] else { return nil }
        return try visible(decode(attributes))
    }

    public func deleteItem(_ key: TableKey, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        var body: [String: JSONValue] = ["TableName": .string(tableName), "Key": DynamoJSON.encode(key.item)]
        try DynamoDBTable.addExpressions(to: &body, [("ConditionExpression", condition)], attributes)
        _ = try client.call("DeleteItem", .object(body))
    }

    public func query(_ request: QueryRequest) throws(TableError) -> QueryPage {
        _ = try ExpressionParser.keyCondition(request.keyCondition, request.attributes,
                                              partitionName: request.indexName == nil ? "PK" : "GSI1PK",
                                              sortName: request.indexName == nil ? "SK" : "GSI1SK")
        var body: [String: JSONValue] = ["TableName": .string(tableName), "ScanIndexForward": .bool(request.scanIndexForward)]
        try DynamoDBTable.addExpressions(to: &body, [("KeyConditionExpression", request.keyCondition)], request.attributes)
        if let index = request.indexName {
            body["IndexName"] = .string(index)  // global secondary indexes are eventually consistent only
        } else {
            body["ConsistentRead"] = true
        }
        if let limit = request.limit { body["Limit"] = .number(limit) }
        if let start = request.exclusiveStartKey { body["ExclusiveStartKey"] = DynamoJSON.encode(start) }
        return try page(client.call("Query", .object(body)), hidingExpired: !request.includingExpired)
    }

    public func transactWrite(_ actions: [TransactWriteAction]) throws(TableError) {
        guard (1...100).contains(actions.count) else {
            throw .invalidRequest("a transaction has 1 to 100 actions, not \(actions.count)")
        }
        let items: [JSONValue] = try actions.map { action throws(TableError) in
            var body: [String: JSONValue] = ["TableName": .string(tableName)]
            switch action {
            case .put(let item, let condition, let attributes):
                body["Item"] = DynamoJSON.encode(item)
                try DynamoDBTable.addExpressions(to: &body, [("ConditionExpression", condition)], attributes)
                return ["Put": .object(body)]
            case .update(let key, let update, let condition, let attributes):
                body["Key"] = DynamoJSON.encode(key.item)
                try DynamoDBTable.addExpressions(to: &body, [("UpdateExpression", update), ("ConditionExpression", condition)], attributes)
                return ["Update": .object(body)]
            case .delete(let key, let condition, let attributes):
                body["Key"] = DynamoJSON.encode(key.item)
                try DynamoDBTable.addExpressions(to: &body, [("ConditionExpression", condition)], attributes)
                return ["Delete": .object(body)]
            case .conditionCheck(let key, let condition, let attributes):
                body["Key"] = DynamoJSON.encode(key.item)
                try DynamoDBTable.addExpressions(to: &body, [("ConditionExpression", condition)], attributes)
                return ["ConditionCheck": .object(body)]
            }
        }
        // The client retries a timed-out request with the same body; the token makes DynamoDB treat
        // a retry of a transaction that did commit as the same transaction, not a new one whose
        // conditions now fail.
        let token = Base64.urlEncoded(DynamoDBTable.clientRequestTokenBytes())
        _ = try client.call("TransactWriteItems", ["TransactItems": .array(items), "ClientRequestToken": .string(token)])
    }

    public func scan(limit: Int?, exclusiveStartKey: Item?) throws(TableError) -> QueryPage {
        var body: [String: JSONValue] = ["TableName": .string(tableName), "ConsistentRead": true]
        if let limit { body["Limit"] = .number(limit) }
        if let exclusiveStartKey { body["ExclusiveStartKey"] = DynamoJSON.encode(exclusiveStartKey) }
        return try page(client.call("Scan", .object(body)))
    }

    /// 24 random bytes from the system's secure generator (three getrandom calls: one per eight
    /// bytes); only their uniqueness matters, and a transaction's round trip dwarfs their cost.
    static func clientRequestTokenBytes() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        for _ in 0..<3 { withUnsafeBytes(of: generator.next() as UInt64) { bytes += $0 } }
        return bytes
    }

    // MARK: - Encoding

    /// Adds the expressions that are present, and only the `#name`/`:value` placeholders they use:
    /// DynamoDB refuses unused ones, the local store does not care, and callers build one
    /// attribute set for several expressions.
    ///
    /// Condition and update expressions are first parsed with the local store's parser, so both
    /// backends refuse the same expressions with `invalidRequest`: DynamoDB itself refuses most
    /// of them with a ValidationException, but moto answers some malformed ones with HTTP 500,
    /// which would be retried as if the store were unavailable.
    static func addExpressions(to body: inout [String: JSONValue], _ expressions: [(field: String, text: String?)],
                               _ attributes: ExpressionAttributes) throws(TableError) {
        var used: Set<Substring> = []
        for (field, text) in expressions {
            guard let text else { continue }
            try validate(field, text, attributes)
            body[field] = .string(text)
            used.formUnion(placeholders(in: text))
        }
        let names = attributes.names.filter { used.contains(Substring($0.key)) }
        let values = attributes.values.filter { used.contains(Substring($0.key)) }
        if !names.isEmpty { body["ExpressionAttributeNames"] = .object(names.mapValues(JSONValue.string)) }
        if !values.isEmpty { body["ExpressionAttributeValues"] = .object(values.mapValues(\.dynamoJSON)) }
    }

    static let keyNames: Set<String> = ["PK", "SK"]

    private static func validate(_ field: String, _ text: String, _ attributes: ExpressionAttributes) throws(TableError) {
        switch field {
        case "UpdateExpression":
            let update = try ExpressionParser.update(text, attributes)
            for path in update.sets.map(\.0) + update.removes {
                if let name = path.topLevelName, keyNames.contains(name) {
                    throw .invalidRequest("cannot update attribute \(name): it is part of the key")
                }
            }
        case "ConditionExpression":
            _ = try ExpressionParser.condition(text, attributes)
        default:
            break  // a key condition, checked by `query` against its index's key names
        }
    }

    /// Every `#name` and `:value` token (DynamoDB expressions have no string literals to skip).
    static func placeholders(in expression: String) -> Set<Substring> {
        var found: Set<Substring> = []
        var index = expression.startIndex
        while index < expression.endIndex {
            let character = expression[index]
            guard character == "#" || character == ":" else {
                index = expression.index(after: index)
                continue
            }
            var end = expression.index(after: index)
            while end < expression.endIndex, expression[end].isASCII,
                  expression[end].isLetter || expression[end].isNumber || expression[end] == "_" {
                end = expression.index(after: end)
            }
            if expression.index(after: index) < end { found.insert(expression[index..<end]) }
            index = end
        }
        return found
    }

    func decode(_ json: JSONValue) throws(TableError) -> Item {
        do {
            return try DynamoJSON.decodeItem(json)
        } catch {
            throw .corrupted("DynamoDB returned an item that is not valid DynamoDB JSON: \(error.reason)")
        }
    }

    func visible(_ item: Item) -> Item? {
        DynamoDBTable.isExpired(item, now: clock.now()) ? nil : item
    }

    /// The local store's rule: past its `ttl` means `ttl` < now.
    static func isExpired(_ item: Item, now: Double) -> Bool {
        guard case .n(let text)? = item["ttl"], let ttl = Double(text) else { return false }
        return ttl < now
    }

    func page(_ response: JSONValue, hidingExpired: Bool = true) throws(TableError) -> QueryPage {
        guard let items = response["Items"]?.arrayValue else {
            throw .unavailable("DynamoDB answered without Items")
        }
        var visibleItems: [Item] = []
        visibleItems.reserveCapacity(items.count)
        for item in items {
            let decoded = try decode(item)
            if let kept = hidingExpired ? visible(decoded) : decoded { visibleItems.append(kept) }
        }
        let lastKey = try response["LastEvaluatedKey"].map { json throws(TableError) in try decode(json) }
        return QueryPage(items: visibleItems, lastEvaluatedKey: lastKey)
    }
}
