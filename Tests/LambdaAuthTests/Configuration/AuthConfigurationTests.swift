import LambdaAuth
import Logging
import Testing

@Suite struct AuthConfigurationTests {
    @Test func defaults() throws {
        let configuration = try AuthConfiguration.fromEnvironment([:])
        #expect(configuration.identityProviders.first { $0.name == .google }?.audiences.isEmpty == true)
        #expect(configuration.store == .local(directory: ".auth-store"))
        #expect(configuration.maxSessions == 5)
        #expect(configuration.refreshGrace == 30)
        #expect(configuration.fixedNow == nil)
    }

    @Test func parsesAudienceLists() throws {
        let configuration = try AuthConfiguration.fromEnvironment(["AUTH_GOOGLE_AUDIENCES": "web, ios ,android,"])
        #expect(configuration.identityProviders.first { $0.name == .google }?.audiences == ["web", "ios", "android"])
    }

    @Test(arguments: [
        ("AUTH_CLOCK_SKEW", "soon"), ("AUTH_MAX_SESSIONS", "0"), ("AUTH_LINK_BY_EMAIL", "always"),
        ("AUTH_CREDENTIALS", "magic"), ("AUTH_CREDENTIALS_TTL", "60"), ("AUTH_GOOGLE_JWKS_URL", "http://example.com/keys"),
        ("AUTH_APPLE_JWKS_URL", "ftp://x"), ("AUTH_NOW", "2026-01-01T00:00:00Z"), ("AUTH_LOG_LEVEL", "loud"),
        ("AUTH_REQUIRE_NONCE", "maybe"), ("AUTH_STORE", "dynamodb:x"),
    ])
    func invalidValuesNameTheirVariable(_ variable: String, _ value: String) {
        do {
            _ = try AuthConfiguration.fromEnvironment([variable: value])
            Issue.record("accepted \(variable)=\(value)")
        } catch {
            #expect(error.code == .configError)
            #expect(error.message.contains(variable))
        }
    }

    @Test func loopbackHTTPIsAllowedForJWKS() throws {
        let configuration = try AuthConfiguration.fromEnvironment(["AUTH_GOOGLE_JWKS_URL": "http://127.0.0.1:8080/certs"])
        #expect(configuration.identityProviders.first { $0.name == .google }?.jwksURI == "http://127.0.0.1:8080/certs")
    }

    /// The configuration's error for `environment`, with AUTH_SECRETS resolved first as a handler
    /// does; nil when it is accepted.
    static func configurationError(_ environment: [String: String]) -> String? {
        do {
            let resolved = try Startup.resolvedEnvironment(environment, logger: Logger.jsonLines(level: .error))
            _ = try AuthConfiguration.fromEnvironment(resolved)
            return nil
        } catch {
            return error.description
        }
    }

    @Test(arguments: ["AUTH_GUEST", "AUTH_EMAIL"])
    func switchesAreOnOrOff(_ variable: String) throws {
        let enabled = { (configuration: AuthConfiguration) in
            variable == "AUTH_GUEST" ? configuration.guestsEnabled : configuration.emailEnabled
        }
        #expect(enabled(try AuthConfiguration.fromEnvironment([variable: "ON"])))
        #expect(!enabled(try AuthConfiguration.fromEnvironment([variable: "off"])))
        #expect(!enabled(try AuthConfiguration.fromEnvironment([:])))
        #expect(Self.configurationError([variable: "true"]) == "CONFIG_ERROR: \(variable) must be on or off")
    }

    /// Where secrets, email codes and Apple's tokens are sent: https://, or http:// to loopback.
    @Test(arguments: ["AUTH_SECRETS_ENDPOINT", "AUTH_SES_ENDPOINT", "AUTH_APPLE_TOKEN_URL", "AUTH_APPLE_REVOKE_URL"])
    func endpointsAreHTTPSOrLoopbackHTTP(_ variable: String) {
        let secrets = variable == "AUTH_SECRETS_ENDPOINT"
        let base = secrets ? ["AUTH_SECRETS": "ssm:/x", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                              "AWS_SECRET_ACCESS_KEY": "not-a-real-secret"] : [:]
        func error(_ value: String) -> String? {
            Self.configurationError(base.merging([variable: value]) { $1 })
        }
        #expect(error("http://apple.example.com/x") == "CONFIG_ERROR: \(variable) may use http:// only for a loopback address")
        #expect(error("http://127.0.0.1@example.com/x") == "CONFIG_ERROR: \(variable) may use http:// only for a loopback address")
        for value in ["file:///tmp/x", "ftp://example.com", "https://", "example.com"] {
            #expect(error(value) == "CONFIG_ERROR: \(variable) must be an https:// URL, or http:// to a loopback address", "\(value)")
        }
        // Accepted (the secrets' endpoint would be called: its acceptance is SecretsStartupTests').
        guard !secrets else { return }
        for value in ["https://example.com/x", "http://127.0.0.1:5000/x", "http://[::1]:8/x", "http://localhost/x"] {
            #expect(error(value) == nil, "\(value)")
        }
    }

    @Test func fixedClockInTestMode() throws {
        let configuration = try AuthConfiguration.fromEnvironment(["AUTH_TEST_MODE": "1", "AUTH_NOW": "2026-01-01T00:00:00Z"])
        #expect(configuration.clock.now() == 1_767_225_600)
        let epoch = try AuthConfiguration.fromEnvironment(["AUTH_TEST_MODE": "1", "AUTH_NOW": "1767225600"])
        #expect(epoch.fixedNow == 1_767_225_600)
    }

    @Test func dynamoDBNeedsASigningKey() {
        #expect(throws: AuthError.self) { try AuthConfiguration.fromEnvironment(["AUTH_STORE": "dynamodb:users"]) }
    }
}
