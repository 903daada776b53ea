import ArgumentParser
import LambdaAuth
import Logging

/// Operators' view of one user, and its deletion by the same code `delete-account` runs.
struct UserCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Show or delete one user, or prune expired guests (AUTH_STORE names the store).",
        subcommands: [Show.self, Passkeys.self, SetMetadata.self, Delete.self, PruneGuests.self])

    static func services() throws -> AuthServices {
        try AuthServices(configuration: AuthCtlContext.current.configuration(), logger: Logger.jsonLines(level: .warning))
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the user, its sessions and its refresh tokens counted by status.")

        @Argument(help: "The user id.") var userID: String

        func run() throws {
            guard let description = try UserCommands.services().describeUser(userID) else {
                throw CommandFailure("no user \(userID)")
            }
            print(description.prettyPrinted())
        }
    }

    struct Passkeys: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the user's passkeys: id, name, created, last used, transports.")

        @Argument(help: "The user id.") var userID: String

        func run() throws {
            guard let passkeys = try UserCommands.services().describePasskeys(userID) else {
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
            guard let user = try UserCommands.services().setAppMetadata(userID, json: json) else {
                throw CommandFailure("no user \(userID)")
            }
            print(JSONValue.object(["user": user]).prettyPrinted())
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete the user and every item of it (or finish an interrupted deletion); no re-authentication.")

        @Argument(help: "The user id.") var userID: String

        func run() throws {
            guard try UserCommands.services().deleteUser(userID, logger: Logger.jsonLines(level: .warning)) else {
                throw CommandFailure("no user \(userID)")
            }
            print(JSONValue.object(["deleted": true, "userId": .string(userID)]).prettyPrinted())
        }
    }

    struct PruneGuests: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune-guests",
            abstract: "Delete every item of guests past AUTH_GUEST_TTL (what DynamoDB's TTL sweep does), for stores with no sweeper.")

        func run() throws {
            let report = try GuestPruning.prune(configuration: AuthCtlContext.current.configuration(),
                                                logger: Logger.jsonLines(level: .warning))
            print(report.json.prettyPrinted())
        }
    }
}
