import LambdaAuth
import Testing

/// AUTH_SESSION_MAX_AGE and the lifetime of temporary credentials (contract section 13).
@Suite struct SessionLifetimeConfigurationTests {
    @Test func sessionsEndAfterNinetyDaysByDefaultAndZeroMeansNever() throws {
        #expect(try AuthConfiguration.fromEnvironment([:]).sessionMaxAge == 7_776_000)
        #expect(try AuthConfiguration.fromEnvironment(["AUTH_SESSION_MAX_AGE": "0"]).sessionMaxAge == 0)
        #expect(try AuthConfiguration.fromEnvironment(["AUTH_SESSION_MAX_AGE": "86400"]).sessionMaxAge == 86_400)
    }

    @Test(arguments: ["-1", "ninety days", "1.5", "315360001", " 86400"])
    func aBadMaximumAgeNamesItsVariable(_ value: String) {
        do {
            _ = try AuthConfiguration.fromEnvironment(["AUTH_SESSION_MAX_AGE": value])
            Issue.record("accepted AUTH_SESSION_MAX_AGE=\(value)")
        } catch {
            #expect(error.code == .configError)
            #expect(error.message.contains("AUTH_SESSION_MAX_AGE"))
        }
    }

    /// Credentials outlive a sign-out until they expire, so by default they last as long as an
    /// access token, within the 900 to 43200 seconds the contract (and STS) allow.
    @Test(arguments: [(nil, Int64(900)), ("900", 900), ("3600", 3600), ("60", 900), ("86400", 43_200)] as [(String?, Int64)])
    func credentialsLastAsLongAsAnAccessTokenByDefault(accessTokenTTL: String?, expected: Int64) throws {
        let environment = accessTokenTTL.map { ["AUTH_ACCESS_TOKEN_TTL": $0] } ?? [:]
        #expect(try AuthConfiguration.fromEnvironment(environment).credentialsTTL == expected)
        var explicit = environment
        explicit["AUTH_CREDENTIALS_TTL"] = "7200"
        #expect(try AuthConfiguration.fromEnvironment(explicit).credentialsTTL == 7200, "an explicit value wins")
    }
}
