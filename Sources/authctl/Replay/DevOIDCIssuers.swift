import LambdaAuth
import LambdaAuthTooling

/// Loopback stand-ins for the issuers of configured OpenID Connect providers, started for one
/// replayed scenario (`"oidcIssuers"`): contract section 14 takes `issuer` and `jwksUri` only on
/// `https://` or loopback `http://`, so a `file://` JWKS as Google's and Apple's will not do. Each
/// issuer has its own server (as Microsoft, Facebook and a Keycloak have their own hosts), which
/// publishes the dev identity provider's keys at `jwksPath` and answers a discovery document
/// under any path (`<prefix>/.well-known/openid-configuration` names `<base><prefix>` as its
/// issuer and the JWKS as its `jwks_uri`), so a configured issuer of any shape on that server
/// finds its keys as the real one would. Tokens are signed by the same in-process provider, so
/// every algorithm it signs works here, not only the RSA key it keeps on disk.
final class DevOIDCIssuers: Sendable {
    struct Issuer: Sendable {
        /// The configured provider it stands in for: `{{oidcIssuer NAME}}`, `{{idToken NAME …}}`.
        var name: String
        var jwksPath = "/keys"
        /// The algorithms it publishes a key for.
        var algorithms: [JWSAlgorithm] = [.rs256]
        /// Whether its JWKs carry `alg` (Microsoft's do not: one key then serves RS* and PS*).
        var keysDeclareAlgorithm = true

        static let fields: Set = ["name", "jwksPath", "algorithms", "keysDeclareAlgorithm"]

        /// An entry of a scenario's `"oidcIssuers"`; `fail` names the problem in the scenario.
        init(_ json: JSONValue, fail: (String) -> CommandFailure) throws {
            guard let members = json.objectValue, let name = members["name"]?.stringValue else {
                throw fail("each oidcIssuers entry needs a \"name\" (the configured provider's)")
            }
            self.name = name
            if let unknown = members.keys.filter({ !Issuer.fields.contains($0) }).sorted().first {
                throw fail("oidcIssuers \(name): unknown field \(unknown) (known: \(Issuer.fields.sorted().joined(separator: ", ")))")
            }
            if let path = members["jwksPath"] {
                guard let text = path.stringValue, text.hasPrefix("/") else { throw fail("oidcIssuers \(name): jwksPath must start with /") }
                jwksPath = text
            }
            if let names = members["algorithms"] {
                let parsed = names.arrayValue?.compactMap { $0.stringValue.flatMap(JWSAlgorithm.init(rawValue:)) } ?? []
                guard !parsed.isEmpty, parsed.count == names.arrayValue?.count else {
                    throw fail("oidcIssuers \(name): algorithms must be a non-empty array among \(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: " "))")
                }
                algorithms = parsed
            }
            if let declares = members["keysDeclareAlgorithm"] {
                guard let flag = declares.boolValue else { throw fail("oidcIssuers \(name): keysDeclareAlgorithm must be true or false") }
                keysDeclareAlgorithm = flag
            }
        }
    }

    static let discoverySuffix = "/.well-known/openid-configuration"

    let identityProvider: DevIdentityProvider
    private let issuers: [String: Issuer]
    private let servers: [String: LoopbackHTTPServer]

    init(_ issuers: [Issuer], identityProvider: DevIdentityProvider) throws {
        self.identityProvider = identityProvider
        var byName: [String: Issuer] = [:], servers: [String: LoopbackHTTPServer] = [:]
        for issuer in issuers {
            guard byName[issuer.name] == nil else { throw CommandFailure("oidcIssuers names \(issuer.name) twice") }
            let server = try LoopbackHTTPServer { _ in .drop }
            let base = server.baseURL, jwks = identityProvider.jwks(for: issuer.algorithms, declaringAlgorithm: issuer.keysDeclareAlgorithm)
            server.respond { request in DevOIDCIssuers.answer(request, issuer: issuer, base: base, jwks: jwks) }
            byName[issuer.name] = issuer
            servers[issuer.name] = server
        }
        self.issuers = byName
        self.servers = servers
    }

    deinit { servers.values.forEach { $0.stop() } }

    static func answer(_ request: LoopbackHTTPServer.Request, issuer: Issuer, base: String, jwks: JSONValue) -> LoopbackHTTPServer.Response {
        guard request.method == "GET" else { return LoopbackHTTPServer.Response(status: 405) }
        if request.path == issuer.jwksPath { return .json(jwks) }
        if request.path.hasSuffix(discoverySuffix) {
            let prefix = request.path.dropLast(discoverySuffix.count)
            return .json(["issuer": .string(base + prefix), "jwks_uri": .string(base + issuer.jwksPath),
                          "id_token_signing_alg_values_supported": .array(issuer.algorithms.map { .string($0.rawValue) })])
        }
        return LoopbackHTTPServer.Response(status: 404, text: "not found")
    }

    /// `{{oidcIssuer NAME}}`: the stand-in's `http://127.0.0.1:PORT`, for AUTH_OIDC_PROVIDERS.
    func baseURL(of name: String) throws -> String {
        guard let server = servers[name] else { throw CommandFailure("no oidcIssuers entry named \(name) in the scenario") }
        return server.baseURL
    }

    /// A token of the configured provider `settings` (its `iss`, its first audience and algorithm
    /// unless the options say otherwise), signed with the key its stand-in publishes.
    /// Options beyond the built-ins': `tid` (also replaces `{tenantid}` in `iss`), `alg`, and
    /// `iss` (a path starting with `/` is on the stand-in's server, e.g. another tenant's issuer).
    func token(_ settings: OIDCProviderSettings, options: [String: String], now: Int64) throws -> String {
        let name = settings.name.rawValue
        guard let issuer = issuers[name], let server = servers[name] else {
            throw CommandFailure("{{idToken \(name)}} needs an oidcIssuers entry named \(name)")
        }
        var claimOptions = options
        let algorithmName = claimOptions.removeValue(forKey: "alg") ?? settings.algorithms[0].rawValue
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName), issuer.algorithms.contains(algorithm) else {
            throw CommandFailure("the dev issuer \(name) publishes no key for \(algorithmName); add it to its oidcIssuers algorithms")
        }
        let tenant = claimOptions.removeValue(forKey: "tid")
        let issuerOverride = claimOptions.removeValue(forKey: "iss")
        if settings.isMultiTenant, tenant == nil, issuerOverride == nil {
            throw CommandFailure("{{idToken \(name)}}: its issuer has \(OIDCProviderSettings.tenantPlaceholder); say tid=")
        }
        var token = try DevIdentityProvider.tokenOptions(claimOptions, alsoKnown: ["tid", "alg", "iss"], defaultAudience: settings.audiences[0],
                                                         now: now)
        token.issuer = issuerOverride.map { $0.hasPrefix("/") ? (server.baseURL + $0) : $0 } ?? settings.issuer
        token.tenantID = tenant
        do {
            return try identityProvider.token(claims: token.claims(for: settings.name, now: now), algorithm: algorithm,
                                              declaringAlgorithm: issuer.keysDeclareAlgorithm)
        } catch {
            throw CommandFailure("cannot mint a dev token for \(name): \(error)")
        }
    }
}

extension PlaceholderFiller {
    /// `{{idToken NAME …}}` for a provider of the step's AUTH_OIDC_PROVIDERS, read when a token
    /// asks for it, so a step that tests a broken configuration needs no valid one.
    func configuredProviderToken(_ name: String, options: [String: String]) throws -> String {
        guard let oidcIssuers else { throw CommandFailure("{{idToken \(name)}}: \(name) is not google or apple, and the scenario has no oidcIssuers") }
        guard let configuration = oidcConfiguration else {
            throw CommandFailure("{{idToken \(name)}} needs AUTH_OIDC_PROVIDERS (inline) in the scenario's or the step's environment")
        }
        let providers: [OIDCProviderSettings]
        do {
            providers = try OIDCProviderSettings.parse(Array(configuration.utf8), variable: "AUTH_OIDC_PROVIDERS", requireNonce: false)
        } catch {
            throw CommandFailure("{{idToken \(name)}}: \(error)")
        }
        guard let settings = providers.first(where: { $0.name.rawValue == name }) else {
            throw CommandFailure("{{idToken \(name)}}: AUTH_OIDC_PROVIDERS has no provider named \(name)")
        }
        return try oidcIssuers.token(settings, options: options, now: now)
    }
}
