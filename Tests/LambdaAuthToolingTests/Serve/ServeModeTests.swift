import LambdaAuthTooling
import Testing

/// Which environment `authctl serve` runs on: the dev identity provider (which signs anyone in as
/// anyone) only where everything else is dev too.
@Suite struct ServeModeTests {
    static let devDirectory = "/tmp/serve-mode-dev"

    func mode(_ environment: [String: String], dev: Bool = false) throws(ServeMode.Refusal) -> ServeMode {
        try ServeMode.choose(environment: environment, devDirectory: ServeModeTests.devDirectory, explicitDev: dev)
    }

    @Test func theDevDefaultsOnlyWhereNothingIsReal() throws {
        #expect(try mode([:]) == .dev(store: ServeModeTests.devDirectory + "/store"))
        #expect(try mode(["AUTH_STORE": ServeModeTests.devDirectory + "/store/"]) == .dev(store: ServeModeTests.devDirectory + "/store/"))
        // An app on email codes, passkeys or guests configures no provider, and its store, keys
        // or secrets are real: the reproduced account takeover ran on exactly these.
        for real in [["AUTH_STORE": "/srv/auth-store"], ["AUTH_STORE": "dynamodb:users"], ["AUTH_SIGNING_KEYS": "-----BEGIN PRIVATE KEY-----"],
                     ["AUTH_SIGNING_KEY_FILE": "/run/key.pem"], ["AUTH_SECRETS": "arn:aws:secretsmanager:eu-west-1:1:secret:auth"],
                     ["AUTH_GOOGLE_AUDIENCES": "web"], ["AUTH_OIDC_PROVIDERS": "[]"]] {
            guard case .configured = try mode(real) else {
                Issue.record("\(real) ran the dev identity provider")
                continue
            }
        }
    }

    @Test func anExplicitDevRefusesRealData() throws {
        #expect(try mode(["AUTH_STORE": "/tmp/my-local-store"], dev: true) == .dev(store: "/tmp/my-local-store"))
        #expect(try mode(["AUTH_GOOGLE_AUDIENCES": "web"], dev: true) == .dev(store: ServeModeTests.devDirectory + "/store"))
        for (real, named) in [(["AUTH_STORE": "dynamodb:users"], "DynamoDB"), (["AUTH_SECRETS": "arn:aws:secretsmanager:x"], "AUTH_SECRETS"),
                              (["AUTH_SIGNING_KEYS": "-----BEGIN PRIVATE KEY-----"], "AUTH_SIGNING_KEYS")] {
            #expect(throws: ServeMode.Refusal.self, "\(real)") { try mode(real, dev: true) }
            do { _ = try mode(real, dev: true) } catch { #expect(error.description.contains(named), "\(error)") }
        }
    }
}
