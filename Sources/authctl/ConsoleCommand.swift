import ArgumentParser
import LambdaAuth
import LambdaAuthTooling
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// `authctl console`: the web console of contract section 23 on loopback, on whichever store
/// AUTH_STORE names (the local store, or DynamoDB with the operator's AWS credentials).
struct ConsoleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "A web console on 127.0.0.1: find users, revoke sessions, delete passkeys, reset a second factor, edit app metadata, delete users, read recent events.",
        discussion: "Prints a URL with a random token; requests without it are 401. Every change goes through the same functions as "
            + "`authctl users`, so it is revoked, evented and logged as any change. SIGINT or SIGTERM stops it."
    )

    @Option(help: "The port on 127.0.0.1 (0: any free one, printed).") var port: UInt16 = 8788

    func run() throws {
        let configuration = try AuthCtlContext.current.configuration()
        let logger = Logger.jsonLines(level: .info)
        let administration = try AuthServices(configuration: configuration, logger: logger).administration
        let console = ConsoleApp(administration: administration, token: ConsoleApp.newToken(),
                                 recentEvents: ConsoleCommand.recentEvents(configuration), logger: logger)
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        let listener: ServeListener
        do {
            // Loopback only, with no option to widen it: the console acts on every user.
            listener = try ServeListener(host: "127.0.0.1", port: port) { request in
                console.respond(request) ?? ServeListener.Response(status: 303, headers: [("location", ConsoleApp.basePath)])
            }
        } catch {
            throw CommandFailure(error.description)
        }
        writeStandardOutputLine("lambda-auth console on http://127.0.0.1:\(listener.port)\(console.entryPath)")
        var received: Int32 = 0
        while sigwait(&stopSignals, &received) != 0 {}
        _ = listener.stop()
    }

    /// The events page's reader: the local store's change log, read whole each time (it keeps
    /// the recent changes only); nil on DynamoDB.
    static func recentEvents(_ configuration: AuthConfiguration) -> @Sendable () throws -> [JSONValue]? {
        guard case .local(let directory) = configuration.store else { return { nil } }
        let table = LocalTable(directory: directory, clock: configuration.clock)
        let options = ItemEvents.Options(source: configuration.issuer, includeEmail: configuration.eventsIncludeEmail)
        return {
            var reader = EventsCommands.Tail.Reader(table: table, options: options)
            return try reader.next()
        }
    }
}
