import ArgumentParser
import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

/// `authctl events ...`: the events the store's changes publish (contract section 22).
struct EventsCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "The events the local store's changes publish (as the events handler publishes DynamoDB's).",
        subcommands: [Tail.self])

    struct Tail: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the change log's events, one CloudEvents JSON object a line, oldest first.")

        @Flag(help: "Keep printing new events as they are committed.")
        var follow = false

        @Option(help: "Print only the last N events already there (default: all the change log keeps).")
        var last: Int?

        @Flag(help: "Print the stream records themselves instead of events.")
        var records = false

        func run() throws {
            let configuration = try AuthCtlContext.current.configuration()
            guard case .local(let directory) = configuration.store else {
                throw CommandFailure("events tail reads the local store's change log; on DynamoDB the events handler publishes to EventBridge")
            }
            var reader = Reader(table: LocalTable(directory: directory, clock: configuration.clock),
                                options: ItemEvents.Options(source: configuration.issuer, includeEmail: configuration.eventsIncludeEmail))
            var first = true
            while true {
                var lines = try reader.next(records: records).map { $0.serialized() }
                if first, let last { lines = Array(lines.suffix(max(0, last))) }
                first = false
                // Unbuffered: a follower's reader sees each event as it comes.
                for line in lines { writeStandardOutputLine(line) }
                guard follow else { return }
                usleep(250_000)
            }
        }

        /// What `events tail` prints, read on from where the last read stopped: the change log's
        /// events (or, with `records`, its stream records) committed since, oldest first.
        /// `authctl replay --events-out` reads the local store's events through this too.
        struct Reader {
            let table: LocalTable
            let options: ItemEvents.Options
            private var seen: String?

            init(table: LocalTable, options: ItemEvents.Options) {
                self.table = table
                self.options = options
            }

            mutating func next(records: Bool = false) throws -> [JSONValue] {
                var lines: [JSONValue] = []
                for change in try table.changeRecords() where seen.map({ change.orderingKey > $0 }) ?? true {
                    seen = change.orderingKey
                    if records {
                        lines.append(change.streamRecord(sourceARN: "local:changes"))
                    } else if let event = ItemEvents.event(for: change, options: options) {
                        lines.append(event.json)
                    }
                }
                return lines
            }
        }
    }
}
