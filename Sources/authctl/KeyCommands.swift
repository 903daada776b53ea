import ArgumentParser
import LambdaAuth

/// `authctl keys generate`: a new access-token key for `AUTH_SIGNING_KEYS` (docs/keys-and-secrets.md, "Key rotation").
struct KeyCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Access-token signing keys.",
        subcommands: [Generate.self, Reseal.self]
    )

    /// The algorithms an access-token key may sign, by the key type that signs each.
    enum Algorithm: String, CaseIterable, ExpressibleByArgument {
        case RS256, ES256

        var jws: JWSAlgorithm {
            switch self {
            case .RS256: return .rs256
            case .ES256: return .es256
            }
        }
    }

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new PEM private key (its kid goes to stderr), to add to AUTH_SIGNING_KEYS.",
            discussion: """
                RS256 (the default) prints an RSA key of 2048 bits: the only kind API Gateway's JWT \
                authorizer verifies, and what Infra/template.yaml requires (AUTH_SIGNING_ALGORITHM). \
                ES256 prints a P-256 key, for deployments whose resource servers verify tokens \
                themselves (shorter tokens, faster signing).
                """
        )

        @Option(name: .customLong("alg"), help: "RS256 or ES256.")
        var algorithm: Algorithm = .RS256

        func run() throws {
            let key = AccessTokenKey.generate(algorithm.jws)
            print(key.pemRepresentation)
            standardError("kid \(key.keyID) (\(key.algorithm.rawValue))")
        }
    }

    /// Kept apart from the signing keys' commands: it reads only AUTH_DATA_KEYS and the store.
    struct Reseal: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-seal every stored value under the first key of AUTH_DATA_KEYS (docs/keys-and-secrets.md, \"Data-key rotation\").")

        func run() throws {
            let configuration = try AuthCtlContext.current.configuration()
            guard let keys = configuration.dataKeys else {
                throw CommandFailure("\(DataKeys.variable) (or AUTH_DATA_KEY) is not set: there is no key to re-seal under")
            }
            let table = try makeTable(configuration, clock: configuration.clock)
            // Second-factor secrets first: the provider tokens' pass ends by erasing old copies.
            let factors = try SecondFactorReseal.run(table: table, keys: keys)
            let outcome = try ProviderTokenReseal.run(table: table, keys: keys)
            print("second factors: re-sealed \(factors.resealed), already under the first key \(factors.alreadyCurrent)")
            print("re-sealed \(outcome.resealed), already under the first key \(outcome.alreadyCurrent)")
        }
    }
}
