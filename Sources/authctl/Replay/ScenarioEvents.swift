import LambdaAuth
import LambdaAuthTooling

/// `authctl replay --events-out`: what a scenario's changes publish (contract section 22), read
/// the way each backend offers them (the local store's change log, the table's DynamoDB Stream),
/// so that a test can check the two backends publish the same events for the same scenario.
/// Each line: `{"scenario", "event"}`, the event with what differs between runs normalised: its
/// `id`, `time` and `sequence` dropped, and the random user, session and passkey ids replaced by
/// `user-1`, `session-1`, … in order of appearance.
enum ScenarioEvents {
    struct Collector {
        private(set) var changes: [ItemChange] = []
        private var last: String?

        /// The change log's records not seen yet (a later erasure cannot take those back).
        mutating func follow(localStore directory: String) throws {
            for change in try LocalTable(directory: directory, clock: SystemClock()).changeRecords()
            where last.map({ change.orderingKey > $0 }) ?? true {
                changes.append(change)
                last = change.orderingKey
            }
        }

        /// Every record of the table's stream.
        mutating func read(stream table: String, endpoint: String, inherited: [String: String]) throws {
            let reader = DynamoDBStreamReader(
                endpoint: endpoint, region: inherited["AWS_REGION"] ?? "us-east-1",
                credentials: AWSCredentials(accessKeyID: inherited["AWS_ACCESS_KEY_ID"] ?? "testing",
                                            secretAccessKey: inherited["AWS_SECRET_ACCESS_KEY"] ?? "testing"))
            changes += try reader.records(table: table).map { try ItemChange(streamRecord: $0) }
        }
    }

    static func append(_ changes: [ItemChange], scenario: String, to path: String) throws {
        var names: [String: String] = [:]
        var counts: [String: Int] = [:]
        func normalised(_ value: String, as kind: String) -> JSONValue {
            if let known = names[value] { return .string(known) }
            counts[kind, default: 0] += 1
            let name = "\(kind)-\(counts[kind]!)"
            names[value] = name
            return .string(name)
        }
        var lines = ""
        for change in changes {
            guard let event = ItemEvents.event(for: change, options: ItemEvents.Options(source: "replay")) else { continue }
            var data = event.data
            for (field, kind) in [("userId", "user"), ("sessionId", "session"), ("passkeyId", "passkey")] {
                if let value = data[field]?.stringValue { data[field] = normalised(value, as: kind) }
            }
            let line: JSONValue = ["scenario": .string(scenario), "type": .string(event.type.rawValue), "data": .object(data)]
            lines += line.serialized() + "\n"
        }
        let earlier = FileSystem.exists(path) ? try FileSystem.readFile(path) : []
        try FileSystem.writeAtomically(path, earlier + Array(lines.utf8))
    }
}
