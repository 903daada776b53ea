import LambdaAuth
import Testing

@Suite struct AuthConfigurationTests {
    @Test func defaults() throws {
        let configuration = try AuthConfiguration.fromEnvironment([:])
        #expect(configuration.google.audiences.isEmpty)
        #expect(configuration.store == .local(directory: ".auth-store"))
        #expect(configuration.maxSessions == 5)
        #expect(configuration.refreshGrace == 30)
        #expect(configuration.fixedNow == nil)
    }

    @Test func parsesAudienceLists() throws {
        let configuration = try AuthConfiguration.fromEnvironment(["AUTH_GOOGLE_AUDIENCES": "web, ios ,android,"])
        #expect(configuration.google.audiences == ["web", "ios", "android"])
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
        #expect(configuration.google.jwksURL == "http://127.0.0.1:8080/certs")
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
