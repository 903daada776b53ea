/// One OpenID Connect provider: Google and Apple, preset (`presets`), and those configured in
/// AUTH_OIDC_PROVIDERS (contract section 14): Microsoft Entra ID, Okta, Auth0, Keycloak, Facebook
/// Limited Login, …, each with its own issuer, audiences, keys and rules.
public struct OIDCProviderSettings: Sendable, Equatable {
    /// What `VerifiedIdentity.emailVerified` says for this provider's tokens.
    public enum EmailVerifiedPolicy: String, Sendable, CaseIterable {
        /// The token's `email_verified` (true or "true"), as for Google and Apple.
        case claim
        /// The provider verifies every address it puts in `email` (and sends no claim saying so).
        case always
        /// The provider's addresses are never trusted: no linking by email, ever.
        case never
    }

    /// The placeholder of Microsoft's multi-tenant issuer, replaced by the token's `tid`.
    public static let tenantPlaceholder = "{tenantid}"
    /// The JWS algorithms a configured provider may allow.
    public static let allowedAlgorithms: [JWSAlgorithm] = JWSAlgorithm.allCases

    public var name: ProviderName
    public var issuer: String
    /// Other spellings of `issuer` its tokens may carry (Google documents `accounts.google.com` too).
    public var issuerAliases: [String]
    public var audiences: [String]
    /// nil: read from the discovery document at `discoveryURL`.
    public var jwksURI: String?
    public var algorithms: [JWSAlgorithm]
    public var emailVerified: EmailVerifiedPolicy
    public var requireNonce: Bool
    /// The accepted `tid` values of a `{tenantid}` issuer; nil: every tenant.
    public var tenants: [String]?

    public init(name: ProviderName, issuer: String, issuerAliases: [String] = [], audiences: [String], jwksURI: String? = nil,
                algorithms: [JWSAlgorithm] = [.rs256], emailVerified: EmailVerifiedPolicy = .claim,
                requireNonce: Bool = false, tenants: [String]? = nil) {
        self.name = name
        self.issuer = issuer
        self.issuerAliases = issuerAliases
        self.audiences = audiences
        self.jwksURI = jwksURI
        self.algorithms = algorithms
        self.emailVerified = emailVerified
        self.requireNonce = requireNonce
        self.tenants = tenants
    }

    /// Whether `issuer` is Microsoft's multi-tenant form, matched against each token's `tid`.
    public var isMultiTenant: Bool { issuer.contains(text: OIDCProviderSettings.tenantPlaceholder) }

    /// Google and Apple as their documentation gives them; `presets` adds what a deployment sets.
    public static let google = OIDCProviderSettings(name: .google, issuer: "https://accounts.google.com", issuerAliases: ["accounts.google.com"],
                                                    audiences: [], jwksURI: "https://www.googleapis.com/oauth2/v3/certs")
    public static let apple = OIDCProviderSettings(name: .apple, issuer: "https://appleid.apple.com", audiences: [],
                                                   jwksURI: "https://appleid.apple.com/auth/keys")

    /// Google and Apple with AUTH_<NAME>_AUDIENCES (empty: PROVIDER_NOT_CONFIGURED at sign-in) and
    /// AUTH_<NAME>_JWKS_URL (`jwksVariable`, which may also be file://: `AuthConfiguration.validateCombinations`).
    static func presets(_ reader: EnvironmentReader, requireNonce: Bool) -> [OIDCProviderSettings] {
        [google, apple].map { preset in
            var settings = preset
            settings.audiences = reader.list("AUTH_\(preset.name.rawValue.uppercased())_AUDIENCES")
            settings.jwksURI = reader.string(preset.jwksVariable) ?? preset.jwksURI
            settings.requireNonce = requireNonce
            return settings
        }
    }

    /// A preset's key-set variable; a configured provider's `jwksUri` was checked when parsed.
    var jwksVariable: String { name.isBuiltIn ? "AUTH_\(name.rawValue.uppercased())_JWKS_URL" : OIDCProviderSettings.variable }

    /// OpenID Connect Discovery 1.0 §4: the issuer without its trailing `/`, then the well-known path.
    public var discoveryURL: String {
        var base = Substring(issuer)
        while base.hasSuffix("/") { base = base.dropLast() }
        return base + "/.well-known/openid-configuration"
    }

    static let variable = "AUTH_OIDC_PROVIDERS"
    static let fileVariable = "AUTH_OIDC_PROVIDERS_FILE"
    static let fields: Set<String> = ["name", "issuer", "audiences", "jwksUri", "algorithms", "emailVerified", "requireNonce", "tenants"]

    /// AUTH_OIDC_PROVIDERS (the JSON array itself) or AUTH_OIDC_PROVIDERS_FILE (a file holding
    /// it); neither: no configured provider. `requireNonce` is AUTH_REQUIRE_NONCE, each entry's default.
    static func fromEnvironment(_ reader: EnvironmentReader, requireNonce: Bool) throws(AuthError) -> [OIDCProviderSettings] {
        let inline = reader.string(variable), path = reader.string(fileVariable)
        if inline != nil, path != nil {
            throw AuthConfiguration.configError("\(variable) and \(fileVariable)", "are both set; set only one")
        }
        if let inline { return try parse(Array(inline.utf8), variable: variable, requireNonce: requireNonce) }
        guard let path else { return [] }
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(path, limit: 256 << 10)
        } catch {
            throw AuthConfiguration.configError(fileVariable, "cannot be read (\(error))")
        }
        return try parse(bytes, variable: fileVariable, requireNonce: requireNonce)
    }

    /// The array of entries. Every problem names `variable`, the entry (its name, or its index
    /// when the name itself is the problem) and the field.
    public static func parse(_ json: [UInt8], variable: String, requireNonce: Bool) throws(AuthError) -> [OIDCProviderSettings] {
        let document: JSONValue
        do {
            document = try JSONValue.parse(json)
        } catch {
            throw AuthConfiguration.configError(variable, "is not valid JSON (\(error))")
        }
        guard let entries = document.arrayValue else {
            throw AuthConfiguration.configError(variable, "must be a JSON array of provider objects")
        }
        var providers: [OIDCProviderSettings] = []
        for (index, entry) in entries.enumerated() {
            let provider = try parseEntry(entry, index: index, variable: variable, requireNonce: requireNonce)
            if let earlier = providers.firstIndex(where: { $0.name == provider.name }) {
                throw AuthError(.configError, "\(variable) entry \(index): field name: \(provider.name.rawValue) is already the name of entry \(earlier)")
            }
            providers.append(provider)
        }
        return providers
    }

    static func parseEntry(_ entry: JSONValue, index: Int, variable: String, requireNonce: Bool) throws(AuthError) -> OIDCProviderSettings {
        guard let members = entry.objectValue else {
            throw AuthError(.configError, "\(variable) entry \(index): must be a JSON object")
        }
        func problem(_ entryName: String, _ field: String, _ text: String) -> AuthError {
            AuthError(.configError, "\(variable) entry \(entryName): field \(field): \(text)")
        }
        guard let rawName = members["name"]?.stringValue else {
            throw problem("\(index)", "name", "is required, a string")
        }
        guard let name = ProviderName(configured: rawName) else {
            let reason = ProviderName.reservedNames.contains(rawName)
                ? "\(rawName) is reserved (google, apple, email, guest and passkey are built in)"
                : "must match [a-z][a-z0-9-]{1,31}"
            throw problem("\(index)", "name", reason)
        }
        let entryName = "\"\(rawName)\""
        if let unknown = members.keys.filter({ !fields.contains($0) }).sorted().first {
            throw problem(entryName, unknown, "is not a known field (\(fields.sorted().joined(separator: ", ")))")
        }

        guard let issuer = members["issuer"]?.stringValue else { throw problem(entryName, "issuer", "is required, a string") }
        if let reason = urlProblem(issuer) { throw problem(entryName, "issuer", reason) }

        let audiences = try strings(members["audiences"], required: true) { problem(entryName, "audiences", $0) } ?? []

        var jwksURI: String?
        if let value = members["jwksUri"] {
            guard let uri = value.stringValue else { throw problem(entryName, "jwksUri", "must be a string") }
            if let reason = urlProblem(uri) { throw problem(entryName, "jwksUri", reason) }
            if uri.contains(text: tenantPlaceholder) { throw problem(entryName, "jwksUri", "cannot contain \(tenantPlaceholder)") }
            jwksURI = uri
        }

        var algorithms: [JWSAlgorithm] = [.rs256]
        if let value = members["algorithms"] {
            let allowed = allowedAlgorithms.map(\.rawValue).joined(separator: " ")
            let names = try strings(value, required: true) { problem(entryName, "algorithms", "\($0), among \(allowed)") } ?? []
            algorithms = []
            for name in names {
                guard let algorithm = JWSAlgorithm(rawValue: name), allowedAlgorithms.contains(algorithm) else {
                    throw problem(entryName, "algorithms", "\(name) is not one of \(allowed)")
                }
                algorithms.append(algorithm)
            }
        }

        var emailVerified = EmailVerifiedPolicy.claim
        if let value = members["emailVerified"] {
            guard let text = value.stringValue, let policy = EmailVerifiedPolicy(rawValue: text) else {
                throw problem(entryName, "emailVerified", "must be \"claim\", \"always\" or \"never\"")
            }
            emailVerified = policy
        }

        var nonceRequired = requireNonce
        if let value = members["requireNonce"] {
            guard let flag = value.boolValue else { throw problem(entryName, "requireNonce", "must be true or false") }
            nonceRequired = flag
        }

        let tenants = try strings(members["tenants"], required: false) { problem(entryName, "tenants", $0) }
        let settings = OIDCProviderSettings(name: name, issuer: issuer, audiences: audiences, jwksURI: jwksURI, algorithms: algorithms,
                                            emailVerified: emailVerified, requireNonce: nonceRequired, tenants: tenants)
        if settings.isMultiTenant {
            guard jwksURI != nil else {
                throw problem(entryName, "jwksUri", "is required with an issuer containing \(tenantPlaceholder) (Microsoft's: https://login.microsoftonline.com/common/discovery/v2.0/keys)")
            }
        } else if tenants != nil {
            throw problem(entryName, "tenants", "applies only to an issuer containing \(tenantPlaceholder)")
        }
        return settings
    }

    /// A non-empty array of distinct non-empty strings (a repeated one is a typo's likely sign);
    /// nil when absent and not required.
    static func strings(_ value: JSONValue?, required: Bool, _ problem: (String) -> AuthError) throws(AuthError) -> [String]? {
        guard let value else {
            if required { throw problem("is required, a non-empty array of strings") }
            return nil
        }
        guard let list = value.arrayValue, !list.isEmpty else { throw problem("must be a non-empty array of strings") }
        var strings: [String] = []
        for item in list {
            guard let text = item.stringValue, !text.isEmpty else { throw problem("must hold only non-empty strings") }
            guard !strings.contains(text) else { throw problem("lists \(text) twice") }
            strings.append(text)
        }
        return strings
    }

    /// Why `url` is not where tokens may be fetched from or claim to come from: `https://` with a
    /// host, or `http://` to a loopback address; nil when it is fine.
    static func urlProblem(_ url: String) -> String? {
        if url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) { return "must not contain spaces or control characters" }
        if url.hasPrefix("http://") {
            return JWKSLocation.isLoopback(url) ? nil : "may use http:// only for a loopback address"
        }
        let host = url.dropFirst("https://".count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard url.hasPrefix("https://"), !host.isEmpty, !host.contains(text: "@") else {
            return "must be an https:// URL, or http:// to a loopback address"
        }
        return nil
    }
}
