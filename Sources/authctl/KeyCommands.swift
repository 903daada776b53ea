import ArgumentParser
import LambdaAuth

/// `authctl keys generate`: a new access-token key for `AUTH_SIGNING_KEYS` (README, "Key rotation").
struct KeyCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Access-token signing keys.",
        subcommands: [Generate.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new PEM EC P-256 private key (its kid goes to stderr), to add to AUTH_SIGNING_KEYS."
        )

        func run() throws {
            let key = AccessTokenKey.generate()
            print(key.pemRepresentation)
            standardError("kid \(key.keyID)")
        }
    }
}
