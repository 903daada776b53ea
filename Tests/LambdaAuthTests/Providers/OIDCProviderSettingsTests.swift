import LambdaAuth
import LambdaAuthTooling
import Testing

/// AUTH_OIDC_PROVIDERS and AUTH_OIDC_PROVIDERS_FILE (contract section 14): defaults, every field,
/// and every invalid value a CONFIG_ERROR naming the variable, the entry and the field.
@Suite struct OIDCProviderSettingsTests {
    static let okta = #"{"name": "okta", "issuer": "https://example.okta.com", "audiences": ["app"]}"#

    static func configuration(_ json: String, _ more: [String: String] = [:]) throws(AuthError) -> AuthConfiguration {
        try AuthConfiguration.fromEnvironment(more.merging(["AUTH_OIDC_PROVIDERS": json]) { $1 })
    }

    @Test func noVariableNoProviders() throws {
        #expect(try AuthConfiguration.fromEnvironment([:]).oidcProviders.isEmpty)
        #expect(try Self.configuration("[]").oidcProviders.isEmpty)
    }

    /// Google and Apple are the same settings, preset and read from their own variables, ahead of
    /// the configured providers in the one list the verifier takes.
    @Test func googleAndAppleArePresetsAheadOfTheConfiguredOnes() throws {
        let configuration = try Self.configuration("[\(Self.okta)]", ["AUTH_GOOGLE_AUDIENCES": "web, ios", "AUTH_REQUIRE_NONCE": "true",
                                                                       "AUTH_APPLE_JWKS_URL": "file:///tmp/apple-keys.json"])
        #expect(configuration.identityProviders.map(\.name.rawValue) == ["google", "apple", "okta"])
        #expect(configuration.oidcProviders.map(\.name.rawValue) == ["okta"])
        let google = configuration.identityProviders[0], apple = configuration.identityProviders[1]
        #expect(google.issuer == "https://accounts.google.com" && google.issuerAliases == ["accounts.google.com"])
        #expect(google.audiences == ["web", "ios"] && google.jwksURI == "https://www.googleapis.com/oauth2/v3/certs")
        #expect(apple.issuer == "https://appleid.apple.com" && apple.issuerAliases.isEmpty && apple.audiences.isEmpty)
        #expect(apple.jwksURI == "file:///tmp/apple-keys.json")
        #expect(google.requireNonce && apple.requireNonce && google.algorithms == [.rs256] && apple.emailVerified == .claim)
        #expect(try !AuthConfiguration.fromEnvironment([:]).identityProviders[0].requireNonce)
    }

    @Test func aMinimalEntryTakesTheDefaults() throws {
        let providers = try Self.configuration("[\(Self.okta)]").oidcProviders
        let okta = try #require(providers.first)
        #expect(providers.count == 1)
        #expect(okta.name == ProviderName(configured: "okta"))
        #expect(okta.issuer == "https://example.okta.com")
        #expect(okta.audiences == ["app"])
        #expect(okta.jwksURI == nil)
        #expect(okta.discoveryURL == "https://example.okta.com/.well-known/openid-configuration")
        #expect(okta.algorithms == [.rs256])
        #expect(okta.emailVerified == .claim)
        #expect(okta.requireNonce == false)
        #expect(okta.tenants == nil)
        // requireNonce follows AUTH_REQUIRE_NONCE unless the entry says otherwise.
        #expect(try Self.configuration("[\(Self.okta)]", ["AUTH_REQUIRE_NONCE": "true"]).oidcProviders[0].requireNonce)
    }

    @Test func everyFieldIsRead() throws {
        let json = """
            [{"name": "microsoft", "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0", "audiences": ["a", "b"],
              "jwksUri": "https://login.microsoftonline.com/common/discovery/v2.0/keys",
              "algorithms": ["RS256", "PS256", "ES384", "EdDSA"], "emailVerified": "never", "requireNonce": false,
              "tenants": ["t1", "t2"]},
             {"name": "keycloak-2", "issuer": "http://127.0.0.1:8080/realms/demo/", "audiences": ["web"], "emailVerified": "always"}]
            """
        let providers = try Self.configuration(json, ["AUTH_REQUIRE_NONCE": "true"]).oidcProviders
        #expect(providers.map(\.name.rawValue) == ["microsoft", "keycloak-2"])
        let microsoft = providers[0]
        #expect(microsoft.isMultiTenant)
        #expect(microsoft.audiences == ["a", "b"])
        #expect(microsoft.algorithms == [.rs256, .ps256, .es384, .edDSA])
        #expect(microsoft.emailVerified == .never)
        #expect(microsoft.requireNonce == false)
        #expect(microsoft.tenants == ["t1", "t2"])
        #expect(providers[1].emailVerified == .always)
        #expect(providers[1].requireNonce)
        // A trailing slash is trimmed before the well-known path.
        #expect(providers[1].discoveryURL == "http://127.0.0.1:8080/realms/demo/.well-known/openid-configuration")
    }

    @Test func theFileFormReadsTheSameEntries() throws {
        let directory = try FileSystem.makeTemporaryDirectory()
        defer { FileSystem.removeTree(directory) }
        let path = directory + "/oidc.json"
        try FileSystem.writeAtomically(path, Array("[\(Self.okta)]".utf8), mode: 0o600)
        let providers = try AuthConfiguration.fromEnvironment(["AUTH_OIDC_PROVIDERS_FILE": path]).oidcProviders
        #expect(providers.map(\.name.rawValue) == ["okta"])
        for environment in [["AUTH_OIDC_PROVIDERS_FILE": directory + "/missing.json"],
                            ["AUTH_OIDC_PROVIDERS_FILE": path, "AUTH_OIDC_PROVIDERS": "[]"]] {
            #expect { try AuthConfiguration.fromEnvironment(environment) } throws: { error in
                (error as? AuthError)?.code == .configError && (error as? AuthError)?.message.contains("AUTH_OIDC_PROVIDERS_FILE") == true
            }
        }
    }

    /// (the entries, the entry the message must name, the field it must name)
    static let invalid: [(String, String, String)] = [
        (#"[{"issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "Okta", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "o", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "9lives", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "a-name-that-is-far-too-long-for-us", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "okta_1", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": 5, "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "google", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "guest", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        (#"[{"name": "passkey", "issuer": "https://a.example", "audiences": ["x"]}]"#, "0", "name"),
        ("[\(okta), \(okta)]", "1", "name"),
        (#"[{"name": "okta", "audiences": ["x"]}]"#, "\"okta\"", "issuer"),
        (#"[{"name": "okta", "issuer": "http://example.com", "audiences": ["x"]}]"#, "\"okta\"", "issuer"),
        (#"[{"name": "okta", "issuer": "ftp://example.com", "audiences": ["x"]}]"#, "\"okta\"", "issuer"),
        (#"[{"name": "okta", "issuer": "https://", "audiences": ["x"]}]"#, "\"okta\"", "issuer"),
        (#"[{"name": "okta", "issuer": "https://a.example"}]"#, "\"okta\"", "audiences"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": []}]"#, "\"okta\"", "audiences"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": "x"}]"#, "\"okta\"", "audiences"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": [""]}]"#, "\"okta\"", "audiences"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "jwksUri": "http://10.0.0.1/keys"}]"#, "\"okta\"", "jwksUri"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "jwksUri": "file:///tmp/keys"}]"#, "\"okta\"", "jwksUri"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "algorithms": []}]"#, "\"okta\"", "algorithms"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "algorithms": ["HS256"]}]"#, "\"okta\"", "algorithms"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "algorithms": ["none"]}]"#, "\"okta\"", "algorithms"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "algorithms": ["ES512"]}]"#, "\"okta\"", "algorithms"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "algorithms": ["RS256", "RS256"]}]"#, "\"okta\"", "algorithms"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "emailVerified": "sometimes"}]"#, "\"okta\"", "emailVerified"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "emailVerified": true}]"#, "\"okta\"", "emailVerified"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "requireNonce": "yes"}]"#, "\"okta\"", "requireNonce"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "tenants": ["t"]}]"#, "\"okta\"", "tenants"),
        (#"[{"name": "ms", "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0", "audiences": ["x"]}]"#, "\"ms\"", "jwksUri"),
        (#"[{"name": "ms", "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0", "audiences": ["x"], "jwksUri": "https://k.example", "tenants": []}]"#, "\"ms\"", "tenants"),
        (#"[{"name": "okta", "issuer": "https://a.example", "audiences": ["x"], "audience": "y"}]"#, "\"okta\"", "audience"),
    ]

    @Test(arguments: invalid)
    func invalidEntriesNameTheVariableTheEntryAndTheField(_ json: String, _ entry: String, _ field: String) {
        do {
            let configuration = try Self.configuration(json)
            Issue.record("accepted \(json) as \(configuration.oidcProviders.map(\.name.rawValue))")
        } catch {
            #expect(error.code == .configError)
            #expect(error.message.hasPrefix("AUTH_OIDC_PROVIDERS entry \(entry): field \(field): "), "\(error.message)")
        }
    }

    /// (An empty variable counts as unset, like every other.)
    @Test(arguments: ["{}", "not json", #"[{"name": "a"}, 5]"#, "[1]", #"[{"name": "okta", "name": "okta"}]"#])
    func documentsThatAreNotAnArrayOfObjectsNameTheVariable(_ json: String) {
        #expect { try Self.configuration(json) } throws: { error in
            guard let error = error as? AuthError else { return false }
            return error.code == .configError && error.message.hasPrefix("AUTH_OIDC_PROVIDERS")
        }
    }

    @Test func configuredNamesAreProviderNamesTheBuiltInsStayAsTheyWere() throws {
        #expect(ProviderName(configured: "okta")?.rawValue == "okta")
        #expect(ProviderName(configured: "google") == nil)
        #expect(ProviderName(configured: "a") == nil)
        #expect(ProviderName(rawValue: "google") == .google)
        #expect(ProviderName(rawValue: "guest") == nil)
        #expect(ProviderName(rawValue: "okta") == ProviderName(configured: "okta"))
        #expect(try ProviderName.parse("apple") == .apple)
        #expect(throws: AuthError.self) { try ProviderName.parse("okta") }
        let okta = try #require(ProviderName(configured: "okta"))
        #expect(!okta.isBuiltIn && ProviderName.google.isBuiltIn)
        #expect(okta.declarationIndex > ProviderName.email.declarationIndex)
    }
}
