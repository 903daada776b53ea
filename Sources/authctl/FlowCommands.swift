import ArgumentParser
import LambdaAuth
import LambdaAuthTooling
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Running the handlers from the developer's seat: one sample event, the demo, recorded scenarios,
/// and the access-token JWKS for resource servers.
struct InvokeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invoke",
        abstract: "Run a handler (\(HandlerNames.all.joined(separator: ", "))) on an event file.",
        discussion: "{{idToken …}} placeholders are minted by the dev identity provider, {{$refreshToken}} / "
            + "{{$accessToken}} come from the previous response and {{emailCode ADDRESS}} from the outbox."
    )

    @Argument(help: "The handler, one of `authctl handlers`.") var handler: String
    @Argument(help: "The event, a JSON file.") var eventFile: String
    @Option(help: "The dev identity provider's directory, which also keeps the last tokens.") var devDir = ".auth-dev"

    func validate() throws {
        guard HandlerNames.all.contains(handler) else {
            throw ValidationError("there is no handler \(handler); the handlers are \(HandlerNames.all.joined(separator: ", "))")
        }
    }

    func run() throws {
        let context = AuthCtlContext.current
        let environment = try DevEnvironment(directory: devDir)
        let statePath = devDir + "/last-tokens.json"
        var saved: [String: String] = [:]
        if let state = try? JSONValue.parse(FileSystem.readFile(statePath)), case .object(let members) = state {
            for (name, value) in members { saved[name] = value.stringValue }
        }
        let template: JSONValue
        do {
            template = try JSONValue.parse(try FileSystem.readFile(eventFile))
        } catch {
            throw CommandFailure("\(eventFile): \(error)")
        }
        let now = context.environment["AUTH_NOW"].flatMap { Double($0) ?? ISO8601.parse($0) }.map { Int64($0) }
            ?? SystemClock().nowSeconds
        // An Apple authorization code needs Apple's endpoints for the length of the invocation.
        let apple = template.serialized().contains("{{appleCode") ? try DevAppleBackChannel(identityProvider: environment.identityProvider, start: now) : nil
        // {{emailCode ADDRESS}} reads the outbox otp-start writes to (AUTH_EMAIL_SENDER=outbox:DIR, default .auth-dev/outbox).
        let sender = context.environment["AUTH_EMAIL_SENDER"] ?? "outbox:.auth-dev/outbox"
        let outbox = sender.hasPrefix("outbox:") ? String(sender.dropFirst("outbox:".count)) : nil
        let event = try PlaceholderFiller(environment: environment, now: now, saved: saved, appleServer: apple, outbox: outbox).fill(template)
        let result = try environment.invoke(handler, event: event,
                                            environment: environment.handlerEnvironment(context.environment.merging(apple?.environment ?? [:]) { $1 }))
        if !result.log.isEmpty { standardError(String(result.log.dropLast())) }
        guard let document = result.document else { throw CommandFailure("\(handler) printed no JSON response") }
        print(document.prettyPrinted())
        if let tokens = result.body?["tokens"] {
            saved["refreshToken"] = tokens["refreshToken"]?.stringValue
            saved["accessToken"] = tokens["accessToken"]?.stringValue
            try FileSystem.writeAtomically(statePath, JSONValue.object(saved.mapValues(JSONValue.string)).serializedBytes())
        }
    }
}

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "A Google sign-in, a refresh, an Apple link, a second refresh, the sessions list, a sign-out, a "
            + "sign-in by email code, an Apple sign-in with its authorization code, a passkey registered by a software "
            + "authenticator, a sign-out and a sign-in with that passkey, and the account's deletion (revoking "
            + "Apple's token first), on the embedded defaults, in a fresh temporary store."
    )

    func run() throws {
        let context = AuthCtlContext.current
        let world = try FileSystem.makeTemporaryDirectory(prefix: "lambda-auth-demo")
        defer { FileSystem.removeTree(world) }
        let environment = try DevEnvironment(directory: world + "/dev")
        var variables = context.environment.filter { !$0.key.hasPrefix("AUTH_") }
        variables["AUTH_STORE"] = world + "/store"
        variables["AUTH_LOG_LEVEL"] = "warning"
        // Email codes go to an outbox in the demo's directory, where the demo reads them as a user would.
        variables["AUTH_EMAIL"] = "on"
        variables["AUTH_EMAIL_SENDER"] = "outbox:" + world + "/outbox"
        // Passkeys for the demo's relying party; the software authenticator sets UP and UV.
        variables["AUTH_PASSKEY_RP_ID"] = "localhost"
        variables["AUTH_PASSKEY_ORIGINS"] = "http://localhost:8787"
        let now = SystemClock().nowSeconds
        let apple = try DevAppleBackChannel(identityProvider: environment.identityProvider, start: now)
        variables.merge(apple.environment) { $1 }
        variables = environment.handlerEnvironment(variables)
        let filler = PlaceholderFiller(environment: environment, now: now, saved: [:], appleServer: apple)

        func step(_ title: String, _ handler: String, _ event: JSONValue, status expected: Int = 200) throws -> JSONValue {
            print("\n== \(title) (\(handler))")
            print("request: " + DemoDisplay.abbreviate(event).prettyPrinted())
            let result = try environment.invoke(handler, event: event, environment: variables)
            guard let body = result.body, let status = result.status else {
                throw CommandFailure("\(handler) printed no JSON response; its log:\n\(result.log)")
            }
            print("response \(status): " + DemoDisplay.abbreviate(body).prettyPrinted())
            guard status == expected else { throw CommandFailure("the demo expected \(expected) from \(handler)") }
            return body
        }

        print("lambda-auth demo: a temporary store in \(world), the dev identity provider standing in for Google and Apple")
        let googleToken = try filler.fill("{{idToken google sub=100200300 email=ada@example.com name=\"Ada Lovelace\"}}")
        let signedIn = try step("Google sign-in: a new user", "signin", [
            "provider": "google", "idToken": .string(googleToken),
            "device": ["id": "demo-iphone", "name": "Ada's iPhone", "platform": "ios"],
        ])
        let refreshed = try step("Refresh: the refresh token rotates", "refresh",
                                 ["refreshToken": signedIn["tokens"]!["refreshToken"]!])
        let appleToken = try filler.fill("{{idToken apple sub=001122.demo.3344 email=x7q2demo@privaterelay.appleid.com privateEmail=true}}")
        let accessToken = refreshed["tokens"]!["accessToken"]!.stringValue!
        let linkEvent = Events.wrap(["provider": "apple", "idToken": .string(appleToken)], kind: "http", method: "POST",
                                    headers: ["authorization": "Bearer " + accessToken], path: "/auth/link")
        _ = try step("Link Apple to the same user (an HTTP API event)", "link-provider", linkEvent)
        let second = try step("Second refresh: the rotated token rotates again", "refresh",
                              ["refreshToken": refreshed["tokens"]!["refreshToken"]!])
        _ = try step("The user's active sessions (an HTTP API GET)", "sessions",
                     Events.wrap([:], kind: "http", method: "GET", headers: ["authorization": "Bearer " + accessToken], path: "/auth/sessions"))
        _ = try step("Sign out this device (with its refresh token alone)", "signout",
                     ["refreshToken": second["tokens"]!["refreshToken"]!, "scope": "session"])
        _ = try step("Ask for an email code (an HTTP API event; the message goes to the demo's outbox)", "otp-start",
                     Events.wrap(["email": "Ada@example.com"], kind: "http", method: "POST", headers: [:], path: "/auth/otp/start"),
                     status: 202)
        guard let code = Outbox.latestCode(to: "ada@example.com", in: world + "/outbox") else {
            throw CommandFailure("otp-start wrote no message to the outbox")
        }
        print("outbox: the message to ada@example.com holds the code \(code)")
        _ = try step("Sign in with the email code: the same user (its verified email), the email identity joined", "signin",
                     ["provider": "email", "email": "ada@example.com", "code": .string(code)])
        let again = try step("Sign in with Apple and its authorization code: the same user, a new session, Apple's refresh token kept sealed",
                             "signin", ["provider": "apple", "idToken": .string(appleToken),
                                        "authorizationCode": .string(try filler.fill("{{appleCode sub=001122.demo.3344}}"))])
        let options = try step("Passkey registration options for the signed-in user", "passkey",
                               ["action": "register-options", "accessToken": again["tokens"]!["accessToken"]!])
        guard let challenge = options["publicKey"]?["challenge"]?.stringValue.flatMap(Base64.urlDecoded),
              let handle = options["publicKey"]?["user"]?["id"]?.stringValue.flatMap(Base64.urlDecoded) else {
            throw CommandFailure("passkey register-options gave no challenge or user id")
        }
        var authenticator = SoftPasskeyAuthenticator(rpID: "localhost", origin: "http://localhost:8787", userHandle: handle)
        _ = try step("Register a passkey made by a software authenticator (ES256, attestation none)", "passkey", [
            "action": "register", "accessToken": again["tokens"]!["accessToken"]!, "name": "Ada's laptop",
            "credential": authenticator.registration(challenge: challenge),
        ])
        _ = try step("Sign out every session", "signout", ["refreshToken": again["tokens"]!["refreshToken"]!, "scope": "global"])
        let login = try step("Passkey sign-in options (no caller)", "passkey", ["action": "login-options"])
        guard let loginChallenge = login["publicKey"]?["challenge"]?.stringValue.flatMap(Base64.urlDecoded) else {
            throw CommandFailure("passkey login-options gave no challenge")
        }
        let byPasskey = try step("Sign in with the passkey: the same user, a new session", "signin",
                                 ["provider": "passkey", "credential": authenticator.assertion(challenge: loginChallenge)])
        _ = try step("Delete the account, re-authenticated with a Google ID token", "delete-account", [
            "accessToken": byPasskey["tokens"]!["accessToken"]!, "provider": "google", "idToken": .string(googleToken),
        ])
        guard apple.server.revocations.count == 1 else {
            throw CommandFailure("the demo expected the deletion to revoke Apple's refresh token at the dev Apple server")
        }
        print("\ndemo complete: 15 invocations, all 200 (202 for the code); Apple's refresh token was revoked at the dev "
              + "Apple server, then the account and all its items went")
    }
}

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay recorded scenarios (Events/scenarios/*.json) against the built handlers.",
        discussion: "Each scenario runs on a fresh local store or DynamoDB table (with STS credentials from the same "
            + "endpoint); a mismatch prints a diff."
    )

    @Flag(help: "List every step, not only failures.") var verbose = false
    @Option(help: "local (default) or dynamodb.") var backend: String?
    @Option(help: "The DynamoDB and STS endpoint, with --backend dynamodb.") var endpoint: String?
    @Option(help: "Run every step with AUTH_METRICS=emf, check its one EMF line, and append the lines to this file.")
    var metricsOut: String?
    @Option(help: "After each scenario, compare its table's items (random values masked, sorted) with DIR/<scenario>.items.")
    var exports: String?
    @Flag(help: "With --exports: write the golden files instead of comparing (on the commit that defines them).")
    var recordExports = false
    @Option(help: "Append what each step published to this file, one step a line: the local store's events or the table's stream records.")
    var eventsOut: String?
    @Argument(help: "Scenario files.") var files: [String] = []

    func run() throws {
        let context = AuthCtlContext.current
        let backend = try ReplayBackend(name: backend, endpoint: endpoint)
        guard !files.isEmpty else { throw CommandFailure("name at least one scenario file", exitCode: 2) }
        guard exports != nil || !recordExports else { throw CommandFailure("--record-exports goes with --exports DIR", exitCode: 2) }
        var runner = ScenarioRunner(binDirectory: FileSystem.parentDirectory(of: ProcessRunner.currentExecutable), root: ".",
                                    baseEnvironment: context.environment.filter { !$0.key.hasPrefix("AUTH_") }, backend: backend,
                                    metricsFile: metricsOut, eventsFile: eventsOut)
        runner.exports = exports.map { ($0, recordExports) }
        var passed = 0, failed = 0
        for file in files {
            let scenario = try Scenario(path: file, root: ".")
            let outcome = try runner.run(scenario, verbose: verbose)
            print("\(outcome.passed ? "PASS" : "FAIL") \(file): \(scenario.description) (\(scenario.steps.count) steps)")
            outcome.report.forEach { print($0) }
            if outcome.passed { passed += 1 } else { failed += 1 }
        }
        print("replay: \(passed) passed, \(failed) failed")
        if failed > 0 { throw CommandFailure("\(failed) scenario(s) failed") }
    }
}

struct AccessTokenJWKSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jwks",
        abstract: "Print the public JWKS that resource servers use to verify our access tokens."
    )

    func run() throws {
        let configuration = try AuthCtlContext.current.configuration()
        let services = try AuthServices(configuration: configuration, logger: Logger.jsonLines(level: .warning))
        guard let keys = try services.accessTokenKeys() else {
            throw CommandFailure("no access-token key yet: set AUTH_SIGNING_KEYS(_FILE), or sign a user in once to create the dev key")
        }
        print(keys.jwks.prettyPrinted())
    }
}

/// Long tokens make the demo unreadable; show their start and length instead.
enum DemoDisplay {
    static func abbreviate(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text) where text.hasPrefix("{") || text.hasPrefix("["):
            return (try? JSONValue.parse(text)).map(abbreviate) ?? value
        case .string(let text) where text.count > 48:
            return .string(String(text.prefix(24)) + "…(\(text.count) chars)")
        case .array(let elements): return .array(elements.map(abbreviate))
        case .object(let members): return .object(members.mapValues(abbreviate))
        default: return value
        }
    }
}
