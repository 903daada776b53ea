import ArgumentParser
import LambdaAuth
import LambdaAuthTooling
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Operators' view of one user, and its deletion by the same code `delete-account` runs.
struct UserCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Show or delete one user, import users from another system, or prune expired guests (AUTH_STORE names the store).",
        subcommands: [Show.self, Find.self, List.self, Passkeys.self, SetMetadata.self, RevokeSession.self, DeletePasskey.self, MFAReset.self,
                      Delete.self, Import.self, PruneGuests.self])

    static func administration() throws -> AccountAdministration {
        try AuthServices(configuration: AuthCtlContext.current.configuration(), logger: Logger.jsonLines(level: .warning)).administration
    }

    /// An operator change's outcome (nil: no such user; false: the user has no such session or
    /// passkey): printed as `done`, or a failure naming what was missing.
    static func report(_ outcome: Bool?, userID: String, absent: String, _ done: JSONValue) throws {
        guard let outcome else { throw CommandFailure("no user \(userID)") }
        guard outcome else { throw CommandFailure(absent) }
        print(done.prettyPrinted())
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the user, its sessions and its refresh tokens counted by status.")

        @Argument(help: "The user id (with --from: the user's id in that system).") var userID: String
        @Option(help: ArgumentHelp("The system the user was imported from (firebase, auth0, cognito): USER_ID is its old id.",
                                   valueName: "system"))
        var from: String?

        func run() throws {
            var id = userID
            if let from {
                guard let system = ImportSystem(rawValue: from) else {
                    throw CommandFailure("--from takes firebase, auth0 or cognito, not \(from)", exitCode: 2)
                }
                id = ImportedAccount.userID(system: system.rawValue, sourceID: userID)
            }
            guard let description = try UserCommands.administration().describeUser(id) else {
                throw CommandFailure(from == nil ? "no user \(userID)" : "no user imported from \(from!) id \(userID) (it would be \(id))")
            }
            print(description.prettyPrinted())
        }
    }

    struct Find: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Find users by id, verified email address or provider subject (provider:subject for a configured provider).")

        @Argument(help: "The id, address or subject.") var query: String

        func run() throws {
            print(JSONValue.object(["users": .array(try UserCommands.administration().findUsers(query))]).prettyPrinted())
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List users a page at a time, in the store's scan order (each page's next is the following page's --after).")

        @Option(help: "Users per page, 1 to 100.") var limit = 50
        @Option(help: "The previous page's next.") var after: String?

        func run() throws {
            let page = try UserCommands.administration().listUsers(limit: limit, after: after)
            print(JSONValue.object(["users": .array(page.users), "next": page.next.map(JSONValue.string) ?? .null]).prettyPrinted())
        }
    }

    struct RevokeSession: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-session",
            abstract: "End one of the user's sessions as its own DELETE /sessions/{id} would (refresh tokens revoked, session.ended published).")

        @Argument(help: "The user id.") var userID: String
        @Argument(help: "The session id (users show lists them).") var sessionID: String

        func run() throws {
            try UserCommands.report(UserCommands.administration().revokeSession(userID, sessionID: sessionID, logger: Logger.jsonLines(level: .info)),
                                    userID: userID, absent: "\(sessionID) is not one of the user's active sessions",
                                    ["revoked": true, "userId": .string(userID), "sessionId": .string(sessionID)])
        }
    }

    struct DeletePasskey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete-passkey",
            abstract: "Remove one of the user's passkeys (not its last identity); its sessions stay.")

        @Argument(help: "The user id.") var userID: String
        @Argument(help: "The passkey id (users passkeys lists them).") var passkeyID: String

        func run() throws {
            try UserCommands.report(UserCommands.administration().deletePasskey(userID, passkeyID: passkeyID, logger: Logger.jsonLines(level: .info)),
                                    userID: userID, absent: "the user has no passkey \(passkeyID)",
                                    ["deleted": true, "userId": .string(userID), "passkeyId": .string(passkeyID)])
        }
    }

    struct Passkeys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the user's passkeys: id, name, created, last used, transports.")

        @Argument(help: "The user id.") var userID: String

        func run() throws {
            guard let passkeys = try UserCommands.administration().describePasskeys(userID) else {
                throw CommandFailure("no user \(userID)")
            }
            print(passkeys.prettyPrinted())
        }
    }

    struct SetMetadata: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-metadata",
            abstract: "Replace the user's app metadata (a JSON object of at most 2,048 bytes; '{}' clears it).",
            discussion: "Every access token issued afterwards carries it as the claim app_metadata: the next sign-in, and each session's next refresh.")

        @Argument(help: "The user id.") var userID: String
        @Argument(help: "The metadata, a JSON object, e.g. '{\"role\":\"admin\"}'.") var json: String

        func run() throws {
            guard let user = try UserCommands.administration().setAppMetadata(userID, json: json) else {
                throw CommandFailure("no user \(userID)")
            }
            print(JSONValue.object(["user": user]).prettyPrinted())
        }
    }

    struct MFAReset: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mfa-reset",
            abstract: "Remove the user's second factor and recovery codes (a user who lost both); its sessions stay.",
            discussion: "Publishes mfa.removed as any removal does. The user signs in with one factor until enrolling again.")

        @Argument(help: "The user id.") var userID: String

        func run() throws {
            guard let removed = try UserCommands.administration().resetSecondFactor(userID, logger: Logger.jsonLines(level: .info)) else {
                throw CommandFailure("no user \(userID)")
            }
            print(JSONValue.object(["removed": .bool(removed), "userId": .string(userID)]).prettyPrinted())
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete the user and every item of it (or finish an interrupted deletion); no re-authentication.")

        @Argument(help: "The user id.") var userID: String

        func run() throws {
            guard try UserCommands.administration().deleteUser(userID, logger: Logger.jsonLines(level: .warning)) else {
                throw CommandFailure("no user \(userID)")
            }
            print(JSONValue.object(["deleted": true, "userId": .string(userID)]).prettyPrinted())
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bring users from Firebase, Auth0 or Cognito: identities, email, name, creation time (no passwords).",
            discussion: """
                FILE: a Firebase auth:export JSON file, an Auth0 user export (NDJSON), or Cognito ListUsers pages (JSON); - for stdin. \
                Each user is written whole or not at all, under an id derived from its old one: running the import again \
                writes nothing twice, and finishes an import that was interrupted. Prints a JSON summary on stdout \
                (imported, already present, skipped with a reason each); progress on stderr when it is a terminal. \
                See docs/migration.md.
                """)

        @Option(help: ArgumentHelp("The system the file comes from.", valueName: "firebase|auth0|cognito")) var from: String
        @Option(name: .customLong("provider-map"),
                help: ArgumentHelp("Their provider name = ours (a provider of AUTH_OIDC_PROVIDERS), e.g. microsoft.com=entra; repeatable.",
                                   valueName: "theirs=ours"))
        var providerMap: [String] = []
        @Option(help: ArgumentHelp("Items per commit on the local store (default 10000): fewer, for a store that many processes share.",
                                   valueName: "n"))
        var batchItems: Int?
        @Argument(help: "The export file, or - for stdin.") var file: String

        func run() throws {
            guard let system = ImportSystem(rawValue: from) else {
                throw CommandFailure("--from takes firebase, auth0 or cognito, not \(from)", exitCode: 2)
            }
            let map: [String: String]
            do {
                map = try UserImport.parseProviderMap(providerMap)
            } catch {
                throw CommandFailure(error.description, exitCode: 2)
            }
            let path = file == "-" ? "/dev/stdin" : file
            let users: [SourceUser]
            do {
                users = try system.read(FileSystem.readFile(path, limit: 1 << 33))
            } catch let failure as ImportFormatError {
                throw CommandFailure("\(file): \(failure.description)")
            }
            let configuration = try AuthCtlContext.current.configuration()
            let table = try makeTable(configuration, clock: configuration.clock)
            let meter = isatty(2) == 1 ? ProgressMeter(total: users.count) : nil
            var importer = UserImport(system: system, providerMap: map)
            importer.progress = meter.map { meter in { meter.show($0) } }
            if let batchItems {
                guard batchItems > 0 else { throw CommandFailure("--batch-items needs a positive number", exitCode: 2) }
                importer.localBatchItems = batchItems
            }
            let summary = try importer.run(users, into: table)
            meter?.finish(summary)
            print(summary.json.prettyPrinted())
        }
    }

    /// One line on a terminal, rewritten at most five times a second.
    final class ProgressMeter {
        let total: Int
        var shownAt = 0.0

        init(total: Int) { self.total = total }

        func show(_ summary: UserImport.Summary, force: Bool = false) {
            let now = monotonicSeconds()
            guard force || now - shownAt >= 0.2 else { return }
            shownAt = now
            let line = "\r\u{1B}[Kusers import: \(summary.settled) of \(total) (imported \(summary.imported), "
                + "already present \(summary.alreadyPresent), skipped \(summary.skipped.count))"
            _ = Array(line.utf8).withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        }

        func finish(_ summary: UserImport.Summary) {
            show(summary, force: true)
            _ = write(2, "\n", 1)
        }
    }

    struct PruneGuests: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune-guests",
            abstract: "Delete every item of guests past AUTH_GUEST_TTL (what DynamoDB's TTL sweep does), for stores with no sweeper.")

        func run() throws {
            let report = try AuthServices.pruneGuests(configuration: AuthCtlContext.current.configuration(),
                                                logger: Logger.jsonLines(level: .warning))
            print(report.json.prettyPrinted())
        }
    }
}
