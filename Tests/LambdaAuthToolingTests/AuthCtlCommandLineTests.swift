import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// authctl's command line as scripts rely on it: help on stdout with 0, usage errors on stderr
/// with 2, a command's own failures with their message and 1.
@Suite final class AuthCtlCommandLineTests {
    let store = TestSupport.temporaryDirectory("authctl-command-line")

    deinit { TestSupport.removeTree(store) }

    func authctl(_ arguments: String...) throws -> ProcessRunner.Output {
        try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: ["AUTH_STORE": store])
    }

    @Test func helpListsEveryCommandAndExitsZero() throws {
        for request in [["--help"], ["help"], ["-h"]] {
            let output = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: request)
            #expect(output.exitCode == 0 && output.stderr.isEmpty, "\(request)")
            for command in ["dev-idp", "store", "handlers", "invoke", "demo", "replay", "jwks", "keys", "credentials"] {
                #expect(output.stdoutText.contains("  \(command) "), "\(request) lists \(command)")
            }
        }
        let commandHelp = try authctl("store", "get", "--help")
        #expect(commandHelp.exitCode == 0 && commandHelp.stdoutText.contains("USAGE: authctl store get <pk> <sk>"))
        let viaHelp = try authctl("help", "dev-idp", "token")
        #expect(viaHelp.exitCode == 0 && viaHelp.stdoutText.contains("--provider <google|apple> --sub <sub>"))
    }

    /// The rotation tools: a new key for AUTH_SIGNING_KEYS, and the JWKS of every configured key.
    @Test func keysGenerateMakesAKeyThatJWKSPublishesAfterTheSigningOne() throws {
        let generated = try authctl("keys", "generate")
        #expect(generated.exitCode == 0)
        let fresh = try AccessTokenKeySet.parse(pem: generated.stdoutText, variable: "stdout")
        #expect(fresh.keys.count == 1 && generated.stderrText == "kid \(fresh.signing.keyID) (RS256)\n")
        #expect(fresh.signing.algorithm == .rs256, "RS256 by default: what API Gateway's authorizer verifies")
        let elliptic = try authctl("keys", "generate", "--alg", "ES256")
        let ellipticKey = try AccessTokenKeySet.parse(pem: elliptic.stdoutText, variable: "stdout").signing
        #expect(ellipticKey.algorithm == .es256 && elliptic.stderrText == "kid \(ellipticKey.keyID) (ES256)\n")
        let unknown = try authctl("keys", "generate", "--alg", "HS256")
        #expect(unknown.exitCode != 0 && unknown.stderrText.contains("RS256"), "\(unknown.stderrText)")
        let signing = AccessTokenKey.generate(.es256)
        let jwks = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["jwks"], environment: [
            "AUTH_STORE": store, "AUTH_SIGNING_KEYS": signing.pemRepresentation + "\n" + generated.stdoutText])
        #expect(jwks.exitCode == 0)
        #expect(jwks.json?["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } == [signing.keyID, fresh.signing.keyID])
        #expect(!jwks.stdoutText.contains("\"d\""), "a private part was printed")
    }

    /// The catalogue as JSON for scripts, a table for readers; invoke takes only its names.
    @Test func handlersPrintsTheCatalogueAndInvokeTakesOnlyItsNames() throws {
        let json = try authctl("handlers", "--json")
        #expect(json.exitCode == 0)
        #expect(json.json == .array(HandlerCatalogue.all.map(\.json)))
        #expect(json.json?.arrayValue?.first { $0["name"] == "link-provider" } == [
            "name": "link-provider",
            "routes": [["method": "POST", "path": "/auth/link", "guarded": true], ["method": "DELETE", "path": "/auth/link", "guarded": true]],
        ])
        let table = try authctl("handlers")
        let rows = table.stdoutText.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(rows.first == "HANDLER METHOD PATH GUARDED")
        #expect(rows.count == 1 + HandlerCatalogue.all.reduce(0) { $0 + $1.routes.count })
        #expect(rows.contains("signout POST /auth/signout no") && rows.contains("sessions GET /auth/sessions yes"), "\(rows)")
        let unknown = try authctl("invoke", "magic-link", "event.json")
        #expect(unknown.exitCode == 2, "\(unknown.stderrText)")
        #expect(unknown.stderrText.hasPrefix("authctl: there is no handler magic-link; the handlers are \(HandlerNames.all.joined(separator: ", "))"),
                "\(unknown.stderrText)")
    }

    @Test func aGroupWithoutItsCommandShowsItsHelpAsAUsageError() throws {
        let bare = try authctl()
        #expect(bare.exitCode == 2 && bare.stdoutText.contains("USAGE: authctl <subcommand>"))
        let group = try authctl("store")
        #expect(group.exitCode == 2 && group.stdoutText.contains("USAGE: authctl store <subcommand>"))
    }

    @Test func usageErrorsExitTwoWithTheUsageLine() throws {
        let unknown = try authctl("frobnicate")
        #expect(unknown.exitCode == 2 && unknown.stderrText.hasPrefix("authctl: Unexpected argument 'frobnicate'"))
        let missing = try authctl("store", "get", "USER#1")
        #expect(missing.exitCode == 2 && missing.stderrText.hasPrefix("authctl: Missing expected argument '<sk>'"))
        #expect(missing.stderrText.contains("Usage: authctl store get <pk> <sk>"))
        let extra = try authctl("store", "scan", "--descending")
        #expect(extra.exitCode == 2 && extra.stderrText.hasPrefix("authctl: Unknown option '--descending'"))
        #expect(extra.stdout.isEmpty)
    }

    @Test func valueChecksAndCommandFailuresKeepTheirMessages() throws {
        let limit = try authctl("store", "scan", "--limit", "0")
        #expect(limit.exitCode == 2 && limit.stderrText == "authctl: --limit needs a positive number\n")
        let names = try authctl("store", "delete", "a", "b", "--names", "[1]")
        #expect(names.exitCode == 2 && names.stderrText == "authctl: --names must be a JSON object of strings\n")
        let absent = try authctl("store", "get", "USER#1", "PROFILE")
        #expect(absent.exitCode == 1 && absent.stderrText.hasPrefix("authctl: no item with key"))
    }
}
