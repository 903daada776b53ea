import ArgumentParser
import LambdaAuth

/// `authctl keys generate`: a new access-token key for `AUTH_SIGNING_KEYS` (README, "Key rotation").
struct KeyCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Access-token signing keys.",
        subcommands: [Generate.self, Reseal.self]
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

    /// Kept apart from the signing keys' commands: it reads only AUTH_DATA_KEYS and the store.
    struct Reseal: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-seal every stored value under the first key of AUTH_DATA_KEYS (README, \"Data-key rotation\").")

        func run() throws {
            let configuration = try AuthCtlContext.current.configuration()
            guard let keys = configuration.dataKeys else {
                throw CommandFailure("\(DataKeys.variable) (or AUTH_DATA_KEY) is not set: there is no key to re-seal under")
            }
            let outcome = try ProviderTokenReseal.run(table: makeTable(configuration, clock: configuration.clock), keys: keys)
            print("re-sealed \(outcome.resealed), already under the first key \(outcome.alreadyCurrent)")
        }
    }
}
