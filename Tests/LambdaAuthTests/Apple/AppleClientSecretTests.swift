import Crypto
@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// The client secret as we sign it, and as the dev Apple server (standing in for Apple) checks
/// it: a wrong team id, key id, audience, subject or key, an expired secret and one longer than
/// six months are all `invalid_client`.
@Suite struct AppleClientSecretTests {
    static let clientID = TestIssuer.appleAudience
    let apple: AppleServerFixture
    let now: Int64

    init() throws {
        apple = try AppleServerFixture()
        now = TestIssuer().now
    }

    func settings(teamID: String = AppleServerFixture.teamID, keyID: String = AppleServerFixture.keyID,
                  key: P256.Signing.PrivateKey? = nil) -> AppleServerSettings {
        AppleServerSettings(teamID: teamID, keyID: keyID, privateKey: key ?? apple.privateKey, tokenURL: apple.server.tokenURL,
                            revokeURL: apple.server.revokeURL, dataKeys: DataKeys([apple.dataKey]))
    }

    func secret(iss: String = AppleServerFixture.teamID, kid: String = AppleServerFixture.keyID, iat: Int64? = nil, exp: Int64? = nil,
                aud: String = "https://appleid.apple.com", sub: String = AppleClientSecretTests.clientID,
                key: P256.Signing.PrivateKey? = nil) throws -> String {
        try JWSSigner.signES256(payload: ["iss": .string(iss), "iat": .number(iat ?? now), "exp": .number(exp ?? now + 3600),
                                          "aud": .string(aud), "sub": .string(sub)],
                                keyID: kid, key: key ?? apple.privateKey)
    }

    /// Apple's revocation endpoint's answer to `secret`: its status and `error`.
    func revoke(with secret: String, clientID: String = AppleClientSecretTests.clientID) throws -> (Int, String?) {
        let response = try CurlHTTPClient().send(HTTPRequest(
            method: "POST", url: apple.server.revokeURL, headers: [("content-type", "application/x-www-form-urlencoded")],
            body: Array(PercentEncoding.form([("client_id", clientID), ("client_secret", secret), ("token", "t")]).utf8)))
        return (response.status, AppleTokenClient.errorName(response))
    }

    @Test func ourSecretIsAcceptedAndCarriesApplesClaims() throws {
        let secrets = AppleClientSecrets(settings: settings(), clock: FixedClock(Double(now)))
        let secret = try secrets.secret(clientID: Self.clientID)
        let parsed = try JSONWebToken(parsing: secret)
        #expect(parsed.jws.keyID == AppleServerFixture.keyID)
        #expect(try parsed.jws.checkAlgorithm(allowed: [.es256]) == .es256)
        #expect(parsed.claims["iss"] == .string(AppleServerFixture.teamID))
        #expect(parsed.claims["aud"] == "https://appleid.apple.com")
        #expect(parsed.claims["sub"] == .string(Self.clientID))
        let lifetime = try #require(parsed.claims["exp"]?.int64Value) - (try #require(parsed.claims["iat"]?.int64Value))
        #expect(lifetime > 0 && lifetime <= 15_777_000)
        #expect(try revoke(with: secret).0 == 200)
    }

    @Test func aSecretApplesChecksRefuseIsInvalidClient() throws {
        let other = P256.Signing.PrivateKey()
        let refused: [(String, String)] = [
            ("wrong team id", try secret(iss: "OTHERTEAM1")),
            ("wrong key id", try secret(kid: "OTHERKEY01")),
            ("expired", try secret(iat: now - 7200, exp: now - 1)),
            ("longer than six months", try secret(exp: now + 15_777_001)),
            ("wrong audience", try secret(aud: "https://example.com")),
            ("another client's subject", try secret(sub: "com.example.other")),
            ("signed by another key", try secret(key: other)),
            ("not a JWT", "secret"),
        ]
        for (why, secret) in refused {
            let (status, error) = try revoke(with: secret)
            #expect(status == 400 && error == "invalid_client", "\(why): \(status) \(error ?? "-")")
        }
        #expect(apple.server.revocations.isEmpty)
    }

    @Test func applesInvalidClientIsAConfigErrorThatNamesNoValue() throws {
        for settings in [settings(teamID: "OTHERTEAM1"), settings(keyID: "OTHERKEY01"), settings(key: P256.Signing.PrivateKey())] {
            let client = AppleTokenClient(settings: settings, secrets: AppleClientSecrets(settings: settings, clock: FixedClock(Double(now))),
                                          http: CurlHTTPClient())
            let code = apple.server.mintCode(subject: "000111.a.1", clientID: Self.clientID)
            let error = try #require(throws: AuthError.self) { try client.exchange(code: code, clientID: Self.clientID) }
            #expect(error.code == .configError && error.message.contains("AUTH_APPLE_TEAM_ID"))
            #expect(!error.message.contains(settings.teamID) && !error.message.contains(settings.keyID))
        }
    }

    /// Our form bodies are RFC 3986 percent-encoded (`~` as is; `*`, space and `+` as %XX): the dev
    /// Apple server, reading application/x-www-form-urlencoded, gets every value back exactly.
    @Test func formValuesReachAppleExactly() throws {
        let awkward = "t~o*k e+n%&=/\u{E9}"
        #expect(try revoke(with: awkward).1 == "invalid_client")
        #expect(apple.server.receivedClientSecrets.last == awkward)
        let settings = settings()
        let client = AppleTokenClient(settings: settings, secrets: AppleClientSecrets(settings: settings, clock: FixedClock(Double(now))),
                                      http: CurlHTTPClient())
        try client.revoke(refreshToken: awkward, clientID: Self.clientID)
        #expect(apple.server.revocations == [DevAppleServer.Revocation(clientID: Self.clientID, token: awkward, tokenTypeHint: "refresh_token")])
    }

    @Test func theSecretIsCachedUntilShortlyBeforeItExpires() throws {
        let clock = ManualClock(Double(now))
        let secrets = AppleClientSecrets(settings: settings(), clock: clock)
        let first = try secrets.secret(clientID: Self.clientID)
        clock.advance(by: Double(AppleClientSecrets.lifetime - AppleClientSecrets.renewalMargin - 1))
        #expect(try secrets.secret(clientID: Self.clientID) == first)
        #expect(try secrets.secret(clientID: "com.example.other") != first, "one secret per client id")
        clock.advance(by: 1)
        let renewed = try secrets.secret(clientID: Self.clientID)
        #expect(renewed != first)
        #expect(try JSONWebToken(parsing: renewed).claims["iat"]?.int64Value == Int64(clock.now()))
    }

    @Test func sealedTokensOpenOnlyWithTheirKeyUserAndSubject() throws {
        let sealing = ProviderTokenSealing(keys: DataKeys([apple.dataKey]))
        let sealed = try sealing.seal("apple-refresh-token-plaintext", userID: "user1", provider: .apple, subject: "000111.a.1")
        #expect(!sealed.contains("apple-refresh-token-plaintext"))
        #expect(sealing.open(sealed, userID: "user1", provider: .apple, subject: "000111.a.1") == "apple-refresh-token-plaintext")
        #expect(sealing.open(sealed, userID: "user2", provider: .apple, subject: "000111.a.1") == nil)
        #expect(sealing.open(sealed, userID: "user1", provider: .apple, subject: "000222.b.2") == nil)
        #expect(ProviderTokenSealing(keys: DataKeys([SystemRandomSource().bytes(32)])).open(sealed, userID: "user1", provider: .apple, subject: "000111.a.1") == nil)
    }

    @Test func partialConfigurationNamesWhatIsMissingAndNoValue() throws {
        let full = apple.environment
        for missing in ["AUTH_APPLE_TEAM_ID", "AUTH_APPLE_KEY_ID", "AUTH_APPLE_PRIVATE_KEY", "AUTH_DATA_KEY"] {
            var environment = full
            environment[missing] = nil
            let error = try #require(throws: AuthError.self) { try AuthConfiguration.fromEnvironment(environment) }
            #expect(error.code == .configError && error.message.hasPrefix(missing), "\(error.message)")
            for value in full.values where value.count > 8 { #expect(!error.message.contains(value)) }
        }
        var badURL = full
        badURL["AUTH_APPLE_REVOKE_URL"] = "http://apple.example.com/auth/revoke"
        #expect(throws: AuthError.self) { try AuthConfiguration.fromEnvironment(badURL) }
        var badKey = full
        badKey["AUTH_DATA_KEY"] = Base64.encoded([UInt8](repeating: 1, count: 16))
        #expect(throws: AuthError.self) { try AuthConfiguration.fromEnvironment(badKey) }
        #expect(try AuthConfiguration.fromEnvironment([:]).appleServer == nil)
        #expect(throws: AuthError.self, "an invalid AUTH_DATA_KEY is refused even with the back channel off") {
            try AuthConfiguration.fromEnvironment(["AUTH_DATA_KEY": "c2hvcnQ="])
        }
        #expect(try AuthConfiguration.fromEnvironment(full).appleServer?.tokenURL == apple.server.tokenURL)
    }
}
