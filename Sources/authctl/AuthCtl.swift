import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

/// One `authctl` sub-command. Each concern keeps its commands in its own file and lists them in
/// `AuthCtl.commands`.
struct Command {
    /// e.g. ["dev-idp", "token"]
    let path: [String]
    let usage: String
    let summary: String
    let run: (inout Arguments, AuthCtlContext) throws -> Void
}

/// What every command may use: the environment, and the configuration parsed from it on demand
/// (so that `authctl help` works even when the configuration is incomplete).
struct AuthCtlContext {
    let environment: [String: String]

    /// authctl issues no tokens, so it needs none of the handlers' secrets even with `dynamodb:`.
    func configuration() throws -> AuthConfiguration {
        try AuthConfiguration.fromEnvironment(environment, forHandlers: false)
    }
}

/// Failures that print a clear message and exit non-zero.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32
    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}

/// `--name value`, `--flag` and positional arguments, parsed as commands ask for them.
struct Arguments {
    private(set) var remaining: [String]

    init(_ arguments: [String]) { remaining = arguments }

    /// The value of `--name VALUE` or `--name=VALUE`, removed from the arguments.
    mutating func option(_ name: String) throws -> String? {
        for (index, argument) in remaining.enumerated() {
            if argument == "--\(name)" {
                guard index + 1 < remaining.count else { throw CommandFailure("--\(name) needs a value", exitCode: 2) }
                let value = remaining[index + 1]
                remaining.removeSubrange(index...index + 1)
                return value
            }
            if argument.hasPrefix("--\(name)=") {
                remaining.remove(at: index)
                return String(argument.dropFirst(name.count + 3))
            }
        }
        return nil
    }

    /// Every value of a repeatable option.
    mutating func options(_ name: String) throws -> [String] {
        var values: [String] = []
        while let value = try option(name) { values.append(value) }
        return values
    }

    mutating func flag(_ name: String) -> Bool {
        guard let index = remaining.firstIndex(of: "--\(name)") else { return false }
        remaining.remove(at: index)
        return true
    }

    mutating func positional(_ what: String) throws -> String {
        guard let value = optionalPositional() else { throw CommandFailure("missing \(what)", exitCode: 2) }
        return value
    }

    mutating func optionalPositional() -> String? {
        guard let index = remaining.firstIndex(where: { !$0.hasPrefix("--") || $0 == "-" }) else { return nil }
        return remaining.remove(at: index)
    }

    func finish() throws {
        if let extra = remaining.first { throw CommandFailure("unexpected argument \(extra)", exitCode: 2) }
    }
}

enum AuthCtl {
    static var commands: [Command] {
        DevIDPCommands.all + StoreCommands.all + DynamoDBCommands.all + FlowCommands.all + CredentialCommands.all
    }

    static func main(_ arguments: [String]) -> Never {
        let context = AuthCtlContext(environment: Environment.current())
        if arguments.isEmpty || ["help", "--help", "-h"].contains(arguments[0]) {
            printUsage()
            exit(arguments.isEmpty ? 2 : 0)
        }
        guard let command = commands.filter({ arguments.starts(with: $0.path) }).max(by: { $0.path.count < $1.path.count })
        else {
            standardError("authctl: unknown command '\(arguments.joined(separator: " "))'; try 'authctl help'")
            exit(2)
        }
        var rest = Arguments(Array(arguments.dropFirst(command.path.count)))
        if rest.flag("help") {
            print("usage: authctl \(command.usage)\n\n\(command.summary)")
            exit(0)
        }
        do {
            try command.run(&rest, context)
            exit(0)
        } catch let failure as CommandFailure {
            standardError("authctl: \(failure.description)")
            exit(failure.exitCode)
        } catch let error as AuthError {
            standardError("authctl: \(error.code.rawValue): \(error.message)")
            exit(1)
        } catch {
            standardError("authctl: \(AuthError.from(error).detail ?? String(describing: error))")
            exit(1)
        }
    }

    static func printUsage() {
        print("usage: authctl COMMAND [OPTIONS]\n\ncommands:")
        for command in commands {
            print("  \(command.usage)")
            print("      \(command.summary)")
        }
    }
}

func standardError(_ message: String) {
    Logger.standardError(message)
}
