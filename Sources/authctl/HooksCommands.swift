import ArgumentParser
import LambdaAuth

/// `authctl hooks ...`: the app's hooks as AUTH_HOOKS configures them (contract section 19).
struct HooksCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hooks",
        abstract: "The app's hooks (AUTH_HOOKS): try one with a sample payload.",
        subcommands: [Test.self])

    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a sample payload to the configured hook; print its answer and whether it is valid (exit 1 if not).")

        @Argument(help: "beforeUserCreated, beforeSignIn or accessTokenClaims")
        var type: String

        func run() throws {
            let outcome = try HookTest.run(type, configuration: try AuthCtlContext.current.configuration())
            print("answer: \(outcome.answer ?? "(none)")")
            print((outcome.isValid ? "valid: " : "invalid: ") + outcome.verdict)
            if !outcome.isValid { throw CommandFailure("the \(type) hook's answer is not valid") }
        }
    }
}
