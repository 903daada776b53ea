import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// `authctl store ...`: inspect and move the table named by AUTH_STORE (default .auth-store).
enum StoreCommands {
    static var all: [Command] {
        [
            Command(path: ["store", "get"], usage: "store get PK SK", summary: "print one item as DynamoDB JSON", run: get),
            Command(path: ["store", "put"], usage: "store put 'ITEM_JSON' [--condition EXPR] [--names JSON] [--values JSON]",
                    summary: "write one item given as DynamoDB JSON, optionally only if the condition holds", run: put),
            Command(path: ["store", "delete"], usage: "store delete PK SK [--condition EXPR] [--names JSON] [--values JSON]",
                    summary: "delete one item", run: delete),
            Command(path: ["store", "query"], usage: "store query PK [--index GSI1] [--sk-begins-with P] [--descending] [--limit N]",
                    summary: "print the items of one partition (or GSI1 partition) in key order", run: query),
            Command(path: ["store", "scan"], usage: "store scan [--limit N]", summary: "print every item", run: scan),
            Command(path: ["store", "export"], usage: "store export [FILE]",
                    summary: "write every item as DynamoDB import lines ({\"Item\": {...}}), to stdout by default", run: export),
            Command(path: ["store", "import"], usage: "store import FILE|-",
                    summary: "put every item of a DynamoDB import file (- for stdin), in atomic batches", run: importFile),
        ]
    }

    private static func table(_ context: AuthCtlContext) throws -> any Table {
        let configuration = try context.configuration()
        return try makeTable(configuration, clock: configuration.clock)
    }

    private static func attributes(_ arguments: inout Arguments) throws -> ExpressionAttributes {
        var attributes = ExpressionAttributes()
        if let names = try arguments.option("names") {
            guard case .object(let members)? = try? JSONValue.parse(names) else {
                throw CommandFailure("--names must be a JSON object of strings", exitCode: 2)
            }
            for (placeholder, name) in members {
                guard let name = name.stringValue else { throw CommandFailure("--names must be a JSON object of strings", exitCode: 2) }
                attributes.names[placeholder] = name
            }
        }
        if let values = try arguments.option("values") {
            do {
                attributes.values = try DynamoJSON.decodeItem(JSONValue.parse(values))
            } catch {
                throw CommandFailure("--values must be a JSON object of DynamoDB attribute values: \(error)", exitCode: 2)
            }
        }
        return attributes
    }

    private static func printItems(_ items: [Item]) {
        print(JSONValue.object(["Items": .array(items.map(DynamoJSON.encode)), "Count": .number(items.count)]).prettyPrinted())
    }

    static func get(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let key = TableKey(pk: try arguments.positional("PK"), sk: try arguments.positional("SK"))
        try arguments.finish()
        guard let item = try table(context).getItem(key) else { throw CommandFailure("no item with key \(key)") }
        print(JSONValue.object(["Item": DynamoJSON.encode(item)]).prettyPrinted())
    }

    static func put(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let text = try arguments.positional("ITEM_JSON")
        let condition = try arguments.option("condition")
        let attributes = try attributes(&arguments)
        try arguments.finish()
        let item: Item
        do {
            item = try DynamoJSON.decodeItem(JSONValue.parse(text))
        } catch {
            throw CommandFailure("ITEM_JSON is not a DynamoDB JSON item: \(error)", exitCode: 2)
        }
        try table(context).putItem(item, condition: condition, attributes: attributes)
        print(JSONValue.object(["Item": DynamoJSON.encode(item)]).prettyPrinted())
    }

    static func delete(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let key = TableKey(pk: try arguments.positional("PK"), sk: try arguments.positional("SK"))
        let condition = try arguments.option("condition")
        let attributes = try attributes(&arguments)
        try arguments.finish()
        try table(context).deleteItem(key, condition: condition, attributes: attributes)
        print(JSONValue.object(["Deleted": DynamoJSON.encode(key.item)]).prettyPrinted())
    }

    static func query(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let partition = try arguments.positional("PK")
        let index = try arguments.option("index")
        let prefix = try arguments.option("sk-begins-with")
        let descending = arguments.flag("descending")
        let limit = try limitOption(&arguments)
        try arguments.finish()
        let (partitionName, sortName) = index == nil ? ("PK", "SK") : ("GSI1PK", "GSI1SK")
        var values: [String: AttributeValue] = [":pk": .s(partition)]
        var condition = "#pk = :pk"
        var names = ["#pk": partitionName]
        if let prefix {
            condition += " AND begins_with(#sk, :prefix)"
            names["#sk"] = sortName
            values[":prefix"] = .s(prefix)
        }
        let table = try table(context)
        var items: [Item] = []
        var start: Item?
        repeat {
            let page = try table.query(QueryRequest(indexName: index, keyCondition: condition,
                                                    attributes: ExpressionAttributes(names: names, values: values),
                                                    scanIndexForward: !descending, limit: limit.map { $0 - items.count },
                                                    exclusiveStartKey: start))
            items += page.items
            start = page.lastEvaluatedKey
        } while start != nil && items.count < (limit ?? Int.max)
        printItems(items)
    }

    static func scan(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let limit = try limitOption(&arguments)
        try arguments.finish()
        let table = try table(context)
        var items: [Item] = []
        var start: Item?
        repeat {
            let page = try table.scan(limit: limit.map { $0 - items.count }, exclusiveStartKey: start)
            items += page.items
            start = page.lastEvaluatedKey
        } while start != nil && items.count < (limit ?? Int.max)
        printItems(items)
    }

    private static func limitOption(_ arguments: inout Arguments) throws -> Int? {
        guard let text = try arguments.option("limit") else { return nil }
        guard let limit = Int(text), limit > 0 else { throw CommandFailure("--limit needs a positive number", exitCode: 2) }
        return limit
    }

    static func export(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let path = arguments.optionalPositional()
        try arguments.finish()
        let table = try table(context)
        guard let path, path != "-" else {
            let count = try TableTransfer.export(table, to: 1, path: "stdout")
            standardError("authctl: exported \(count) items")
            return
        }
        let temporary = path + ".partial"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileSystem.Failure(path: temporary, operation: "open", errno: errno) }
        do {
            let count = try TableTransfer.export(table, to: descriptor, path: temporary)
            guard fsync(descriptor) == 0 else { throw FileSystem.Failure(path: temporary, operation: "fsync", errno: errno) }
            close(descriptor)
            guard rename(temporary, path) == 0 else { throw FileSystem.Failure(path: path, operation: "rename", errno: errno) }
            standardError("authctl: exported \(count) items to \(path)")
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
    }

    static func importFile(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let path = try arguments.positional("FILE (or - for stdin)")
        try arguments.finish()
        let table = try table(context)
        let descriptor = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileSystem.Failure(path: path, operation: "open", errno: errno) }
        defer { if descriptor != 0 { close(descriptor) } }
        let count = try TableTransfer.importLines(from: descriptor, path: path == "-" ? "stdin" : path, into: table)
        standardError("authctl: imported \(count) items")
    }
}
