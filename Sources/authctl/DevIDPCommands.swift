import ArgumentParser
import LambdaAuth
import LambdaAuthTooling

/// `authctl dev-idp …`: a local identity provider, so that sign-in runs offline against
/// `AUTH_GOOGLE_JWKS_URL=file://…/.auth-dev/jwks.json`.
struct DevIDPCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-idp",
        abstract: "A local identity provider standing in for Google and Apple.",
        subcommands: [Initialize.self, PrintJWKS.self, MintToken.self]
    )

    struct Location: ParsableArguments {
        @Option(help: ArgumentHelp("Holds the dev key and its JWKS.", valueName: "directory"))
        var dir = DevIdentityProvider.defaultDirectory
    }

    struct Initialize: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create the dev identity provider's RSA key (kept if it exists) and write its JWKS file."
        )

        @OptionGroup var location: Location

        func run() throws {
            let directory = location.dir
            let (provider, created) = try DevIdentityProvider.initialize(directory: directory)
            let jwksPath = absolutePath(DevIdentityProvider.jwksPath(in: directory))
            print(created ? "created a dev RSA-2048 key in \(directory)/\(DevIdentityProvider.keyFileName) (kid \(provider.keyID))"
                          : "kept the existing dev key in \(directory)/\(DevIdentityProvider.keyFileName) (kid \(provider.keyID))")
            print("wrote its JWKS to \(jwksPath); point the verifier at it:")
            print("  export AUTH_GOOGLE_JWKS_URL=file://\(jwksPath) AUTH_APPLE_JWKS_URL=file://\(jwksPath)")
        }
    }

    struct PrintJWKS: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "jwks", abstract: "Print the dev identity provider's JWKS.")

        @OptionGroup var location: Location

        func run() throws {
            print(try DevIdentityProvider.load(directory: location.dir).jwks.serialized())
        }
    }

    struct MintToken: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print a Google- or Apple-shaped ID token signed with the dev key.",
            discussion: "Apple tokens carry no name, as Apple's never do."
        )

        @Option(help: ArgumentHelp("The provider whose token shape to mint.", valueName: "google|apple")) var provider: String
        @Option(help: "The subject (the provider's user id).") var sub: String
        @Option var email: String?
        @Option(help: ArgumentHelp("Default true.", valueName: "true|false")) var emailVerified: String?
        @Option(help: "Defaults to the provider's first configured audience.") var aud: String?
        @Option var nonce: String?
        // Negative values are allowed (an expired token is a useful thing to test with), so the
        // value is taken even when it starts with a dash.
        @Option(parsing: .unconditional, help: ArgumentHelp("From iat to exp (default 3600).", valueName: "seconds"))
        var expiresIn: String?
        @Option var name: String?
        @Option var picture: String?
        @Flag(help: "Mark the email as an Apple private relay address.") var privateEmail = false
        @Option(parsing: .unconditional, help: ArgumentHelp("Epoch seconds or ISO-8601 (default now).", valueName: "time"))
        var iat: String?
        @OptionGroup var location: Location

        func run() throws {
            let provider = try ProviderName.parse(provider)
            guard !sub.isEmpty else { throw CommandFailure("--sub is required", exitCode: 2) }
            let configuration = try AuthCtlContext.current.configuration()
            guard let audience = aud ?? configuration.identityProviders.first(where: { $0.name == provider })?.audiences.first else {
                throw CommandFailure("--aud is required when AUTH_\(provider.rawValue.uppercased())_AUDIENCES is not set", exitCode: 2)
            }
            var options = DevTokenOptions(subject: sub, audience: audience)
            options.email = email
            if let emailVerified {
                guard emailVerified == "true" || emailVerified == "false" else {
                    throw CommandFailure("--email-verified must be true or false", exitCode: 2)
                }
                options.emailVerified = emailVerified == "true"
            }
            options.nonce = nonce
            options.name = name
            options.picture = picture
            options.privateEmail = privateEmail
            if let expiresIn {
                guard let seconds = Int64(expiresIn) else { throw CommandFailure("--expires-in must be whole seconds", exitCode: 2) }
                options.expiresIn = seconds
            }
            if let iat {
                guard let instant = Int64(iat) ?? ISO8601.parse(iat).map({ Int64($0.rounded(.down)) }) else {
                    throw CommandFailure("--iat must be epoch seconds or ISO-8601", exitCode: 2)
                }
                options.issuedAt = instant
            }
            let identityProvider = try DevIdentityProvider.load(directory: location.dir)
            print(try identityProvider.token(claims: options.claims(for: provider, now: configuration.clock.nowSeconds),
                                             provider: provider))
        }
    }
}
