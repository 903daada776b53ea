import ArgumentParser
import LambdaAuth
import Logging

/// `authctl credentials verify`: the offline check a local resource server runs on a request signed
/// with `AUTH_CREDENTIALS=local` credentials.
struct CredentialCommands: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials",
        abstract: "Check requests signed with locally minted credentials.",
        subcommands: [Verify.self]
    )

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a SigV4-signed request made with locally minted credentials (key, expiry, token, signature, "
                + "users/<id>/ prefix); prints the verdict as JSON, exit 1 when refused."
        )

        @Option(help: "The request's method.") var method = "GET"
        @Option(help: "The request's URL.") var url: String
        @Option(help: "'Name: value', once per header.") var header: [String] = []
        @Option(help: "A file holding the request's body (default: empty).") var bodyFile: String?

        func run() throws {
            let headers = try header.map { line -> (name: String, value: String) in
                guard let colon = line.firstIndex(of: ":") else { throw CommandFailure("--header takes 'Name: value', got \(line)", exitCode: 2) }
                return (String(line[..<colon]), String(line[line.index(after: colon)...].drop { $0 == " " }))
            }
            let body = try bodyFile.map { try FileSystem.readFile($0) } ?? []

            let configuration = try AuthCtlContext.current.configuration()
            let secret = try configuration.credentialsSecret ?? AuthServices(configuration: configuration, logger: Logger.jsonLines(level: .error))
                .administration.existingDevCredentialsSecret()
            guard let secret else {
                throw CommandFailure("no credentials secret: set AUTH_CREDENTIALS_SECRET (or sign a user in once to create the dev secret)")
            }
            let request = LocalCredentialVerifier.Request(method: method, url: url, headers: headers, body: body)
            do {
                let claims = try LocalCredentialVerifier(masterSecret: secret).verify(request, now: configuration.clock.nowSeconds)
                print(JSONValue.object(["valid": true, "userId": .string(claims.userID), "prefix": .string(claims.prefix),
                                        "accessKeyId": .string(claims.accessKeyID),
                                        "expiration": .string(ISO8601.format(epochSeconds: claims.expiration))]).prettyPrinted())
            } catch {
                print(JSONValue.object(["valid": false, "reason": .string(error.description)]).prettyPrinted())
                throw CommandFailure("request refused: \(error.description)")
            }
        }
    }
}
