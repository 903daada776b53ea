import ArgumentParser
import LambdaAuth
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// `authctl`: each concern keeps its commands in its own file.
struct AuthCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authctl",
        abstract: "The developer's tool: a dev identity provider, keys, store inspection, replay.",
        subcommands: [DevIDPCommands.self, StoreCommands.self, HandlersCommand.self, InvokeCommand.self, DemoCommand.self,
                      ReplayCommand.self, ServeCommand.self, OpenAPICommand.self, AccessTokenJWKSCommand.self, KeyCommands.self, CredentialCommands.self, UserCommands.self,
                      EventsCommands.self, HooksCommands.self, ConsoleCommand.self]
    )

    /// Usage errors read like every other authctl error: "authctl: what is wrong".
    static var _errorPrefix: String { "authctl: " }

    /// Parses, runs and exits: 0 on success (and for help), 2 for usage errors, otherwise the
    /// failure's code (1 unless the command says otherwise).
    static func runCommandLine(_ arguments: [String]) -> Never {
        var command: ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            exitReporting(error)
        }
        if !type(of: command).configuration.subcommands.isEmpty {
            // A group named without one of its commands (`authctl`, `authctl store`) is a usage
            // error that shows the group's help.
            print(helpMessage(for: type(of: command)))
            Glibc.exit(2)
        }
        do {
            try command.run()
            Glibc.exit(0)
        } catch let failure as CommandFailure {
            standardError("authctl: \(failure.description)")
            Glibc.exit(failure.exitCode)
        } catch let error as AuthError {
            standardError("authctl: \(error.code.rawValue): \(error.message)")
            Glibc.exit(1)
        } catch let help where exitCode(for: help) == .success {
            // `authctl help COMMAND` answers from its run.
            exitReporting(help)
        } catch {
            standardError("authctl: \(AuthError.from(error).detail ?? String(describing: error))")
            Glibc.exit(1)
        }
    }

    /// Help goes to stdout with 0; a usage error to stderr with its usage line and 2.
    private static func exitReporting(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        if code == .success {
            print(fullMessage(for: error))
            Glibc.exit(0)
        }
        standardError(fullMessage(for: error))
        Glibc.exit(code == .validationFailure ? 2 : code.rawValue)
    }
}

/// What every command may use: the environment, and the configuration parsed from it on demand
/// (so that `authctl help` works even when the configuration is incomplete).
struct AuthCtlContext {
    let environment: [String: String]

    static var current: AuthCtlContext { AuthCtlContext(environment: Environment.current()) }

    /// authctl issues no tokens, so it needs none of the handlers' secrets even with `dynamodb:`;
    /// those that `AUTH_SECRETS` holds are read as the handlers read them (`authctl jwks`).
    func configuration() throws -> AuthConfiguration {
        let resolved = try Startup.resolvedEnvironment(environment, logger: Logger.jsonLines(level: .warning))
        return try AuthConfiguration.fromEnvironment(resolved, forHandlers: false)
    }
}

/// Failures that print a clear message and exit non-zero (2 for a bad argument value).
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32
    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}

func standardError(_ message: String) {
    writeStandardErrorLine(message)
}
