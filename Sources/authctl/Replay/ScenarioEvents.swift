import LambdaAuth
import LambdaAuthTooling

/// `authctl replay --events-out FILE`: what each step of a scenario published (contract section
/// 22), read the way each backend offers it, for the tests to check (`MotoEventsTests`): on the
/// local store the events `authctl events tail` prints (its own reader), on DynamoDB the table's
/// stream records, which the test gives to the `events` handler as Lambda would.
///
/// One line a step: `scenario`, `step` (from 1), `handler`, `status`, `request` (the event's body
/// as sent, placeholders filled), `response`, `keys` (the step's variables that hold a key or a
/// secret), and `events` and `items` (local: the events new since the step before, and, after
/// the steps `record` says, every item of the store) or `records` (DynamoDB: the stream records new since the
/// step before). Written so that a test can tell which step published what (a refused request
/// publishes nothing) and search the events for every token, hash, code or key the scenario used
/// or the store holds.
struct ScenarioEvents {
    static let source = "https://auth.replay.test"

    enum Reading {
        case local(EventsCommands.Tail.Reader, LocalTable)
        case stream(DynamoDBStreamReader.Follower, full: DynamoDBStreamReader, table: String)
    }

    let scenario: String
    let path: String
    private var reading: Reading
    private var lines = ""
    private var recordCount = 0

    init(scenario: String, path: String, backend: ReplayBackend, world: String, storeEnvironment: [String: String],
         inherited: [String: String]) throws {
        self.scenario = scenario
        self.path = path
        switch backend {
        case .local:
            // A clock at 0 hides no item: an expired one still holds what it held.
            let table = LocalTable(directory: world + "/store", clock: FixedClock(0))
            reading = .local(EventsCommands.Tail.Reader(table: table, options: ItemEvents.Options(source: ScenarioEvents.source)), table)
        case .dynamoDB(let endpoint):
            guard let table = storeEnvironment["AUTH_STORE"]?.split(separator: ":").last.map(String.init) else {
                throw CommandFailure("--events-out: the scenario's store names no table")
            }
            let reader = DynamoDBStreamReader(
                endpoint: endpoint, region: inherited["AWS_REGION"] ?? "us-east-1",
                credentials: AWSCredentials(accessKeyID: inherited["AWS_ACCESS_KEY_ID"] ?? "testing",
                                            secretAccessKey: inherited["AWS_SECRET_ACCESS_KEY"] ?? "testing"))
            reading = .stream(DynamoDBStreamReader.Follower(reader, table: table), full: reader, table: table)
        }
    }

    /// After a step: what it published, and what it held, as one line. `readItems`: whether to
    /// read the local store's items too (a scan reads every one of the store's 4,096 shards, a
    /// quarter of a second in a debug build, so the runner asks for it where items may be about
    /// to go: after a scenario's last step and before a step that can delete an account).
    mutating func record(step: Int, handler: String, status: Int?, request: JSONValue, response: JSONValue?,
                         variables: [String: String], readItems: Bool) throws {
        var line: [String: JSONValue] = [
            "scenario": .string(scenario), "step": .number(step), "handler": .string(handler),
            "status": status.map { JSONValue.number($0) } ?? .null, "request": request, "response": response ?? .null,
            "keys": .object(variables.filter { name, _ in name.contains("KEY") || name.contains("SECRET") }.mapValues(JSONValue.string)),
        ]
        switch reading {
        case .local(var reader, let table):
            line["events"] = .array(try reader.next())
            reading = .local(reader, table)
            var items: [JSONValue] = []
            var start: Item?
            // A scenario whose first steps are refused has no store yet.
            if readItems, FileSystem.exists(table.directory) { repeat {
                let page = try table.scan(limit: 1000, exclusiveStartKey: start)
                items += page.items.map(DynamoJSON.encode)
                start = page.lastEvaluatedKey
            } while start != nil }
            line["items"] = .array(items)
        case .stream(var follower, let full, let table):
            let records = try follower.next()
            recordCount += records.count
            line["records"] = .array(records)
            reading = .stream(follower, full: full, table: table)
        }
        lines += JSONValue.object(line).serialized() + "\n"
    }

    /// Appends the scenario's lines to the file; on DynamoDB first checks that the steps' reads,
    /// together, hold every record of the stream (a record read late would be blamed on the
    /// wrong step, one missed would go unchecked).
    func finish() throws {
        if case .stream(_, let full, let table) = reading {
            let all = try full.records(table: table).count
            guard all == recordCount else {
                throw CommandFailure("--events-out: the steps read \(recordCount) stream records of \(scenario), the stream holds \(all)")
            }
        }
        let earlier = FileSystem.exists(path) ? try FileSystem.readFile(path) : []
        try FileSystem.writeAtomically(path, earlier + Array(lines.utf8))
    }
}
