import ArgumentParser
import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// `authctl store ...`: inspect and move the table named by AUTH_STORE (default .auth-store).
struct StoreCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Inspect and move the table named by AUTH_STORE (default .auth-store).",
        subcommands: [Get.self, Put.self, Delete.self, Query.self, Scan.self, Export.self, Import.self, CreateTable.self]
    )

    private static func table() throws -> any Table {
        let configuration = try AuthCtlContext.current.configuration()
        return try makeTable(configuration, clock: configuration.clock)
    }

    private static func printItems(_ items: [Item]) {
        print(JSONValue.object(["Items": .array(items.map(DynamoJSON.encode)), "Count": .number(items.count)]).prettyPrinted())
    }

    struct Key: ParsableArguments {
        @Argument(help: "The partition key.") var pk: String
        @Argument(help: "The sort key.") var sk: String

        var key: TableKey { TableKey(pk: pk, sk: sk) }
    }

    /// A write's optional condition, with the placeholders it uses.
    struct Condition: ParsableArguments {
        @Option(help: "A condition expression; the write happens only if it holds.") var condition: String?
        @Option(help: "Expression attribute names, a JSON object of strings.") var names: String?
        @Option(help: "Expression attribute values, a JSON object of DynamoDB attribute values.") var values: String?

        func attributes() throws -> ExpressionAttributes {
            var attributes = ExpressionAttributes()
            if let names {
                guard case .object(let members)? = try? JSONValue.parse(names) else {
                    throw CommandFailure("--names must be a JSON object of strings", exitCode: 2)
                }
                for (placeholder, name) in members {
                    guard let name = name.stringValue else { throw CommandFailure("--names must be a JSON object of strings", exitCode: 2) }
                    attributes.names[placeholder] = name
                }
            }
            if let values {
                do {
                    attributes.values = try DynamoJSON.decodeItem(JSONValue.parse(values))
                } catch {
                    throw CommandFailure("--values must be a JSON object of DynamoDB attribute values: \(error)", exitCode: 2)
                }
            }
            return attributes
        }
    }

    struct Limit: ParsableArguments {
        @Option(help: ArgumentHelp("Stop after this many items.", valueName: "n")) var limit: String?

        func value() throws -> Int? {
            guard let limit else { return nil }
            guard let value = Int(limit), value > 0 else { throw CommandFailure("--limit needs a positive number", exitCode: 2) }
            return value
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print one item as DynamoDB JSON.")

        @OptionGroup var key: Key

        func run() throws {
            guard let item = try table().getItem(key.key) else { throw CommandFailure("no item with key \(key.key)") }
            print(JSONValue.object(["Item": DynamoJSON.encode(item)]).prettyPrinted())
        }
    }

    struct Put: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write one item given as DynamoDB JSON, optionally only if the condition holds.")

        @Argument(help: "The item as DynamoDB JSON.") var itemJSON: String
        @OptionGroup var condition: Condition

        func run() throws {
            let attributes = try condition.attributes()
            let item: Item
            do {
                item = try DynamoJSON.decodeItem(JSONValue.parse(itemJSON))
            } catch {
                throw CommandFailure("ITEM_JSON is not a DynamoDB JSON item: \(error)", exitCode: 2)
            }
            try table().putItem(item, condition: condition.condition, attributes: attributes)
            print(JSONValue.object(["Item": DynamoJSON.encode(item)]).prettyPrinted())
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete one item.")

        @OptionGroup var key: Key
        @OptionGroup var condition: Condition

        func run() throws {
            let attributes = try condition.attributes()
            try table().deleteItem(key.key, condition: condition.condition, attributes: attributes)
            print(JSONValue.object(["Deleted": DynamoJSON.encode(key.key.item)]).prettyPrinted())
        }
    }

    struct Query: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the items of one partition (or GSI1 partition) in key order.")

        @Argument(help: "The partition key (GSI1PK with --index GSI1).") var pk: String
        @Option(help: "GSI1 to query the index.") var index: String?
        @Option(help: "Only sort keys starting with this prefix.") var skBeginsWith: String?
        @Flag(help: "Descending key order.") var descending = false
        @OptionGroup var limit: Limit

        func run() throws {
            let limit = try limit.value()
            let (partitionName, sortName) = index == nil ? ("PK", "SK") : ("GSI1PK", "GSI1SK")
            var values: [String: AttributeValue] = [":pk": .s(pk)]
            var condition = "#pk = :pk"
            var names = ["#pk": partitionName]
            if let skBeginsWith {
                condition += " AND begins_with(#sk, :prefix)"
                names["#sk"] = sortName
                values[":prefix"] = .s(skBeginsWith)
            }
            let table = try table()
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
    }

    struct Scan: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print every item.")

        @OptionGroup var limit: Limit

        func run() throws {
            let limit = try limit.value()
            let table = try table()
            var items: [Item] = []
            var start: Item?
            repeat {
                let page = try table.scan(limit: limit.map { $0 - items.count }, exclusiveStartKey: start)
                items += page.items
                start = page.lastEvaluatedKey
            } while start != nil && items.count < (limit ?? Int.max)
            printItems(items)
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: #"Write every item as DynamoDB import lines ({"Item": {...}}), to stdout by default."#)

        @Argument(help: "The file to write (- or none: stdout).") var file: String?

        func run() throws {
            let table = try table()
            guard let path = file, path != "-" else {
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
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put every item of a DynamoDB import file (- for stdin), in atomic batches.")

        @Argument(help: "The import file, or - for stdin.") var file: String

        func run() throws {
            let table = try table()
            let descriptor = file == "-" ? 0 : open(file, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw FileSystem.Failure(path: file, operation: "open", errno: errno) }
            defer { if descriptor != 0 { close(descriptor) } }
            let count = try TableTransfer.importLines(from: descriptor, path: file == "-" ? "stdin" : file, into: table)
            standardError("authctl: imported \(count) items")
        }
    }
}
