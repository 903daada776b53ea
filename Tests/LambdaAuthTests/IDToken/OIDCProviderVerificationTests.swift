import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Synchronization
import Testing

/// ID tokens of providers configured in AUTH_OIDC_PROVIDERS (contract section 14), issued by the
/// dev identity provider and verified against a loopback server that publishes the discovery
/// document and the JWKS, counting what it is asked for.
final class OIDCProviderVerificationTests {
    let identityProvider = DevIdentityProvider(privateKey: TestKeys.rsa(0))
    let directory = TestSupport.temporaryDirectory()
    let clock = ManualClock(Double(TestIssuer().now))
    let log = CapturedLog()
    let server: LoopbackHTTPServer
    let routes = Routes()
    static let okta = ProviderName(configured: "okta")!
    static let microsoft = ProviderName(configured: "microsoft")!
    static let allAlgorithms: [JWSAlgorithm] = [.rs256, .ps256, .es256, .edDSA]

    /// What the server answers, by path; anything else is 404.
    final class Routes: Sendable {
        let table = Mutex<[String: LoopbackHTTPServer.Response]>([:])
        func set(_ path: String, _ response: LoopbackHTTPServer.Response) { table.withLock { $0[path] = response } }
        func response(_ path: String) -> LoopbackHTTPServer.Response { table.withLock { $0[path] } ?? .init(status: 404) }
    }

    init() throws {
        let routes = routes
        server = try LoopbackHTTPServer { request in routes.response(request.path) }
        serveKeys(for: Self.allAlgorithms)
        serveDiscovery(issuer: issuer)
    }

    deinit {
        server.stop()
        TestSupport.removeTree(directory)
    }

    var issuer: String { server.baseURL + "/realms/demo" }
    var jwksURI: String { server.baseURL + "/keys" }
    static let discoveryPath = "/realms/demo/.well-known/openid-configuration"
    /// A new connection per request, so that counts are exact; fresh for 600 s.
    static let headers = [("Connection", "close"), ("Cache-Control", "max-age=600")]

    func serveKeys(for algorithms: [JWSAlgorithm], declaringAlgorithm: Bool = true) {
        routes.set("/keys", .json(identityProvider.jwks(for: algorithms, declaringAlgorithm: declaringAlgorithm), headers: Self.headers))
    }

    func serveDiscovery(issuer: String) {
        routes.set(Self.discoveryPath, .json(["issuer": .string(issuer), "jwks_uri": .string(jwksURI),
                                              "id_token_signing_alg_values_supported": ["RS256"]], headers: Self.headers))
    }

    func requests(_ path: String) -> Int { server.requests.filter { $0.path == path }.count }

    /// One provider entry; `fields` override or add to the minimal one (nil removes a field).
    func entry(_ fields: [String: JSONValue?] = [:]) -> JSONValue { entry("okta", fields) }

    func entry(_ name: String, _ fields: [String: JSONValue?] = [:]) -> JSONValue {
        var members: [String: JSONValue] = ["name": .string(name), "issuer": .string(issuer), "audiences": ["app"],
                                            "jwksUri": .string(jwksURI)]
        for (field, value) in fields { members[field] = value }
        return .object(members)
    }

    func verifier(_ entries: [JSONValue], _ extra: [String: String] = [:]) throws -> IDTokenVerifier {
        let environment = VerifierEnvironment.make(
            googleJWKS: TestJWKS.file(identityProvider.jwks, in: directory), cacheDirectory: directory,
            extra: extra.merging(["AUTH_OIDC_PROVIDERS": JSONValue.array(entries).serialized()]) { $1 })
        let configuration = try AuthConfiguration.fromEnvironment(environment)
        return IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                               httpClient: CurlHTTPClient(), clock: clock, logger: log.logger)
    }

    /// A token of `provider`, issued now on the manual clock, valid for a day.
    func token(_ algorithm: JWSAlgorithm = .rs256, provider: ProviderName = okta, declaringAlgorithm: Bool = true,
               _ change: (inout DevTokenOptions) -> Void = { _ in }) throws -> String {
        var options = DevTokenOptions(subject: "oidc-user-1", audience: "app")
        options.issuer = issuer
        options.email = "user@example.com"
        options.issuedAt = Int64(clock.now())
        options.expiresIn = 86_400
        change(&options)
        return try identityProvider.token(claims: options.claims(for: provider, now: Int64(clock.now())), algorithm: algorithm,
                                          declaringAlgorithm: declaringAlgorithm)
    }

    func code(_ verifier: IDTokenVerifier, _ token: String, provider: ProviderName = okta, nonce: String? = nil) -> ErrorCode? {
        do {
            _ = try verifier.verify(token, provider: provider, nonce: nonce)
            return nil
        } catch {
            return error.code
        }
    }

    // MARK: algorithms and keys

    @Test(arguments: [JWSAlgorithm.rs256, .ps256, .es256, .edDSA, .es384, .rs512, .ps384])
    func aTokenOfEachAllowedAlgorithmYieldsTheConfiguredProvidersIdentity(_ algorithm: JWSAlgorithm) throws {
        serveKeys(for: [algorithm])
        let verifier = try verifier([entry(["algorithms": [.string(algorithm.rawValue)]])])
        let identity = try verifier.verify(token(algorithm), provider: Self.okta, nonce: nil)
        #expect(identity.provider == Self.okta)
        #expect(identity.provider.rawValue == "okta")
        #expect(identity.subject == "oidc-user-1")
        #expect(identity.email == "user@example.com")
        #expect(identity.emailVerified)
        #expect(verifier.configuredProviders == [Self.okta])
    }

    @Test func anAlgorithmTheProviderDoesNotAllowIsRefusedBeforeAnyFetch() throws {
        let verifier = try verifier([entry()])  // RS256 only, by default
        for algorithm in [JWSAlgorithm.ps256, .es256, .edDSA] {
            #expect(code(verifier, try token(algorithm)) == .unsupportedAlgorithm)
        }
        #expect(requests("/keys") == 0)
    }

    /// Microsoft publishes its keys without `alg`: such a key verifies each allowed algorithm of
    /// its type (one RSA JWK serves RS256 and PS256 here).
    @Test func keysWithoutAlgVerifyEveryAllowedAlgorithmOfTheirType() throws {
        serveKeys(for: Self.allAlgorithms, declaringAlgorithm: false)
        let verifier = try verifier([entry(["algorithms": .array(Self.allAlgorithms.map { .string($0.rawValue) })])])
        for algorithm in Self.allAlgorithms {
            #expect(code(verifier, try token(algorithm, declaringAlgorithm: false)) == nil, "\(algorithm.rawValue)")
        }
        #expect(requests("/keys") == 1)
    }

    /// A JWK declaring RS256 does not verify a PS256 token under its kid, though the key is the same.
    @Test func aKeysDeclaredAlgMustBeTheTokens() throws {
        serveKeys(for: [.rs256])
        let verifier = try verifier([entry(["algorithms": ["RS256", "PS256"]])])
        let options = DevTokenOptions(subject: "s", audience: "app")
        var claims = options.claims(for: Self.okta, now: Int64(clock.now()))
        claims["iss"] = .string(issuer)
        let pss = try JWSSigner.sign(payload: claims, keyID: identityProvider.keyID(for: .rs256), key: .rsa(TestKeys.rsa(0)),
                                     algorithm: .ps256)
        #expect(code(verifier, pss) == .unsupportedAlgorithm)
        #expect(code(verifier, try token(.rs256)) == nil)
    }

    // MARK: claims

    @Test func claimsAreCheckedAsGooglesAre() throws {
        let verifier = try verifier([entry()])
        #expect(code(verifier, try token { $0.audience = "someone-else" }) == .invalidAudience)
        #expect(code(verifier, try token { $0.issuer = "https://evil.example" }) == .invalidIssuer)
        #expect(code(verifier, try token { $0.issuedAt = Int64(self.clock.now()) - 90_000 }) == .tokenExpired)
        #expect(code(verifier, try token { $0.issuedAt = Int64(self.clock.now()) + 600 }) == .tokenNotYetValid)
        #expect(code(verifier, try token { $0.nonce = "n-1" }) == .nonceRequired)
        #expect(code(verifier, try token { $0.nonce = "n-1" }, nonce: "n-2") == .nonceMismatch)
        #expect(code(verifier, try token { $0.nonce = "n-1" }, nonce: "n-1") == nil)
        #expect(code(verifier, "not.a.token") == .malformedToken)
        // A token of one provider is not another's: Google's issuer is not okta's.
        #expect(code(verifier, try token(), provider: .google) == .invalidIssuer)
    }

    /// A token of the configured provider with `changes` made to its claims (nil removes one).
    func token(changing changes: [String: JSONValue?]) throws -> String {
        var options = DevTokenOptions(subject: "oidc-user-1", audience: "app")
        options.issuer = issuer
        options.expiresIn = 86_400
        var claims = options.claims(for: Self.okta, now: Int64(clock.now()))
        for (name, value) in changes { claims[name] = value }
        return try identityProvider.token(claims: claims, algorithm: .rs256, declaringAlgorithm: true)
    }

    /// OpenID Connect Core 3.1.3.7 items 4 and 5, for a configured provider as for Google: of
    /// several audiences, `azp` must be a configured one; one audience is judged by `aud` alone.
    @Test func severalAudiencesNeedAnAuthorizedPartyAmongTheConfiguredOnes() throws {
        let verifier = try verifier([entry(["audiences": ["app", "app-web"]])])
        #expect(code(verifier, try token(changing: ["aud": ["other", "app"], "azp": "other"])) == .invalidAudience)
        #expect(code(verifier, try token(changing: ["aud": ["other", "app"]])) == .invalidAudience)
        #expect(code(verifier, try token(changing: ["aud": ["other", "app"], "azp": "app"])) == nil)
        #expect(code(verifier, try token(changing: ["aud": ["app", "app-web"], "azp": "app-web"])) == nil)
        #expect(code(verifier, try token(changing: ["aud": "app", "azp": "other"])) == nil)
        #expect(code(verifier, try token(changing: ["aud": ["app"], "azp": "other"])) == nil)
    }

    @Test func requireNonceIsPerProviderAndDefaultsToAUTH_REQUIRE_NONCE() throws {
        let strict = try verifier([entry(["requireNonce": true]), entry("lenient")])
        #expect(code(strict, try token()) == .nonceRequired)
        #expect(code(strict, try token(provider: ProviderName(configured: "lenient")!), provider: ProviderName(configured: "lenient")!) == nil)
        let inherited = try verifier([entry()], ["AUTH_REQUIRE_NONCE": "true"])
        #expect(code(inherited, try token()) == .nonceRequired)
        let overridden = try verifier([entry(["requireNonce": false])], ["AUTH_REQUIRE_NONCE": "true"])
        #expect(code(overridden, try token()) == nil)
    }

    @Test(arguments: [("claim", true, true), ("claim", false, false), ("always", false, true), ("never", true, false)])
    func emailVerifiedFollowsThePolicy(_ policy: String, _ claimed: Bool, _ expected: Bool) throws {
        let verifier = try verifier([entry(["emailVerified": .string(policy)])])
        let identity = try verifier.verify(token { $0.emailVerified = claimed }, provider: Self.okta, nonce: nil)
        #expect(identity.emailVerified == expected)
        #expect(identity.email == "user@example.com")
    }

    @Test func alwaysNeverVerifiesAnAbsentAddress() throws {
        let verifier = try verifier([entry(["emailVerified": "always"])])
        let identity = try verifier.verify(token { $0.email = nil }, provider: Self.okta, nonce: nil)
        #expect(identity.email == nil && !identity.emailVerified)
        let empty = try verifier.verify(token { $0.email = "" }, provider: Self.okta, nonce: nil)
        #expect(!empty.emailVerified)
    }

    @Test func aNameThatIsNotConfiguredIsUnsupported() throws {
        let verifier = try verifier([entry()])
        #expect(code(verifier, try token(), provider: ProviderName(configured: "auth0")!) == .unsupportedProvider)
        #expect(code(verifier, try token(), provider: .email) == .unsupportedProvider)
    }

    // MARK: Microsoft's multi-tenant issuer

    static let tenantIssuer = "https://login.microsoftonline.com/{tenantid}/v2.0"

    func microsoftToken(tenant: String?, issuerTenant: String? = nil) throws -> String {
        try token(provider: Self.microsoft) { options in
            options.issuer = Self.tenantIssuer
            options.tenantID = tenant
            if let issuerTenant { options.issuer = Self.tenantIssuer.replacing("{tenantid}", with: issuerTenant) }
        }
    }

    @Test func aTenantIssuerMatchesTheTokensOwnTid() throws {
        let verifier = try verifier([entry("microsoft", ["issuer": .string(Self.tenantIssuer)])])
        #expect(code(verifier, try microsoftToken(tenant: "9188040d-6c67-4c5b-b112-36a304b66dad"), provider: Self.microsoft) == nil)
        #expect(code(verifier, try microsoftToken(tenant: "contoso"), provider: Self.microsoft) == nil)
        // iss of one tenant with the tid of another, or no tid at all: refused.
        #expect(code(verifier, try microsoftToken(tenant: "contoso", issuerTenant: "fabrikam"), provider: Self.microsoft) == .invalidIssuer)
        #expect(code(verifier, try microsoftToken(tenant: nil, issuerTenant: "contoso"), provider: Self.microsoft) == .invalidIssuer)
        // The placeholder itself is not a tenant.
        #expect(code(verifier, try microsoftToken(tenant: nil), provider: Self.microsoft) == .invalidIssuer)
    }

    /// The identity of a `{tenantid}` issuer is `<tid>:<sub>`, so one `sub` in two tenants is two
    /// identities; an exact issuer's is `sub` alone, as it always was.
    @Test func aTenantIssuersSubjectCarriesTheTenant() throws {
        let verifier = try verifier([entry("microsoft", ["issuer": .string(Self.tenantIssuer)]), entry("okta")])
        let contoso = try verifier.verify(try microsoftToken(tenant: "contoso"), provider: Self.microsoft, nonce: nil)
        let fabrikam = try verifier.verify(try microsoftToken(tenant: "fabrikam"), provider: Self.microsoft, nonce: nil)
        #expect(contoso.subject == "contoso:oidc-user-1" && fabrikam.subject == "fabrikam:oidc-user-1")
        #expect(contoso.claims["sub"] == "oidc-user-1")
        #expect(try verifier.verify(try token(), provider: Self.okta, nonce: nil).subject == "oidc-user-1")
        // The tenant is what comes before the first ':' of the subject: a tid holding one is refused.
        #expect(code(verifier, try microsoftToken(tenant: "contoso:evil"), provider: Self.microsoft) == .invalidIssuer)
        // tid and sub together stay within the key-part limit.
        let long = try token(provider: Self.microsoft) { options in
            options.issuer = Self.tenantIssuer
            options.tenantID = "contoso"
            options.subject = String(repeating: "s", count: VerifiedIdentity.maximumKeyPartBytes - "contoso".count)
        }
        #expect(code(verifier, long, provider: Self.microsoft) == .malformedToken)
    }

    @Test func aTenantOutsideTheAllowListIsRefused() throws {
        let verifier = try verifier([entry("microsoft", ["issuer": .string(Self.tenantIssuer), "tenants": ["contoso", "fabrikam"]])])
        #expect(code(verifier, try microsoftToken(tenant: "contoso"), provider: Self.microsoft) == nil)
        #expect(code(verifier, try microsoftToken(tenant: "fabrikam"), provider: Self.microsoft) == nil)
        let outsider = code(verifier, try microsoftToken(tenant: "9188040d-6c67-4c5b-b112-36a304b66dad"), provider: Self.microsoft)
        #expect(outsider == .invalidIssuer)
    }

    // MARK: discovery

    @Test func withoutJwksUriTheDiscoveryDocumentNamesTheKeysOnce() throws {
        let verifier = try verifier([entry(["jwksUri": nil])])
        #expect(code(verifier, try token()) == nil)
        #expect(code(verifier, try token()) == nil)
        #expect(requests(Self.discoveryPath) == 1)
        #expect(requests("/keys") == 1)
        // Both are on disk: a new process fetches neither.
        let next = try self.verifier([entry(["jwksUri": nil])])
        #expect(code(next, try token()) == nil)
        #expect(requests(Self.discoveryPath) == 1)
        #expect(requests("/keys") == 1)
        let files = try FileSystem.listDirectory(directory)
        #expect(files.contains { $0.hasPrefix("lambda-auth-jwks-okta.discovery-") })
        #expect(files.contains { $0.hasPrefix("lambda-auth-jwks-okta-") })
        // A refetch of the keys (an unknown kid, after the cooldown) reuses the fresh discovery copy.
        clock.advance(by: 31)
        let unknown = try JWSSigner.sign(payload: ["sub": "x"], keyID: "rotated", key: .rsa(TestKeys.rsa(0)), algorithm: .rs256)
        #expect(code(next, unknown) == .unknownKeyID)
        #expect(requests("/keys") == 2)
        #expect(requests(Self.discoveryPath) == 1)
    }

    @Test func aTrailingSlashOnTheIssuerIsTrimmedForDiscovery() throws {
        serveDiscovery(issuer: issuer + "/")
        let verifier = try verifier([entry(["jwksUri": nil, "issuer": .string(issuer + "/")])])
        #expect(code(verifier, try token { $0.issuer = self.issuer + "/" }) == nil)
        #expect(requests(Self.discoveryPath) == 1)
    }

    @Test func aDiscoveryDocumentNamingAnotherIssuerIsRefusedAndLogged() throws {
        serveDiscovery(issuer: "https://attacker.example/realms/demo")
        let verifier = try verifier([entry(["jwksUri": nil])])
        let failure = #expect(throws: AuthError.self) { try verifier.verify(self.token(), provider: Self.okta, nonce: nil) }
        #expect(failure?.code == .jwksUnavailable)
        #expect(failure?.status == 503)
        #expect(requests("/keys") == 0)
        #expect(log.lines.contains { $0.contains("JWKS fetch failed") && $0.contains("attacker.example") && $0.contains("not the configured issuer") })
    }

    @Test func discoveryDownWithNothingCachedIsJWKSUnavailable() throws {
        routes.set(Self.discoveryPath, .init(status: 503, headers: [("Connection", "close")]))
        let verifier = try verifier([entry(["jwksUri": nil])])
        #expect(code(verifier, try token()) == .jwksUnavailable)
        #expect(requests("/keys") == 0)
        serveDiscovery(issuer: issuer)
        #expect(code(verifier, try token()) == nil)
    }

    /// The discovery endpoint fails after a first success: the cached copy (in memory, and on
    /// disk for the next process) still names the JWKS, even once it is stale.
    @Test func discoveryDownWithACachedCopyStillFindsTheKeys() throws {
        let verifier = try verifier([entry(["jwksUri": nil])])
        #expect(code(verifier, try token()) == nil)
        routes.set(Self.discoveryPath, .init(status: 500, headers: [("Connection", "close")]))
        clock.advance(by: 700)  // past both max-ages: keys and discovery are refetched
        #expect(code(verifier, try token()) == nil)
        #expect(requests(Self.discoveryPath) == 2)
        #expect(requests("/keys") == 2)
        // A new process reads the stale discovery copy from disk and fetches the keys it names.
        clock.advance(by: 700)
        let next = try self.verifier([entry(["jwksUri": nil])])
        #expect(code(next, try token()) == nil)
        #expect(requests("/keys") == 3)
    }

    @Test func aDiscoveryDocumentWithoutAUsableJwksUriIsRefused() throws {
        for document: JSONValue in [["issuer": .string(issuer)], ["issuer": .string(issuer), "jwks_uri": "http://10.0.0.1/keys"],
                                    ["issuer": .string(issuer), "jwks_uri": "file:///etc/keys"]] {
            routes.set(Self.discoveryPath, .json(document, headers: Self.headers))
            let verifier = try verifier([entry(["jwksUri": nil])])
            #expect(code(verifier, try token()) == .jwksUnavailable)
        }
        #expect(requests("/keys") == 0)
    }

    // MARK: the key cache

    @Test func anUnknownKidRefetchesOnceThenWaitsForTheCooldown() throws {
        let verifier = try verifier([entry()])
        #expect(code(verifier, try token()) == nil)
        let forged = try JWSSigner.sign(payload: ["sub": "x"], keyID: "forged", key: .rsa(TestKeys.rsa(0)), algorithm: .rs256)
        #expect(code(verifier, forged) == .unknownKeyID)
        #expect(code(verifier, forged) == .unknownKeyID)
        // One fetch at the start; the forged kid arrived within the 30 s cooldown, so no other.
        #expect(requests("/keys") == 1)
        clock.advance(by: 31)
        #expect(code(verifier, forged) == .unknownKeyID)
        #expect(requests("/keys") == 2)
    }

    @Test func keysServePastTheirAgeWhenTheServerFailsAndNoneIsJWKSUnavailable() throws {
        routes.set("/keys", .init(status: 500, headers: [("Connection", "close")]))
        let verifier = try verifier([entry()])
        #expect(code(verifier, try token()) == .jwksUnavailable)
        serveKeys(for: [.rs256])
        #expect(code(verifier, try token()) == nil)
        routes.set("/keys", .init(status: 500, headers: [("Connection", "close")]))
        clock.advance(by: 700)
        #expect(code(verifier, try token()) == nil)
    }
}
