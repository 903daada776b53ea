/// AuthConfiguration from the environment. Each setting's default is its declaration's
/// (AuthConfiguration.swift): a variable that is unset leaves it as declared.
extension AuthConfiguration {
    /// - Parameter forHandlers: false for tools that only reach the store (authctl): they need no
    ///   signing key or credentials secret, which the handlers require with `dynamodb:`.
    public static func fromEnvironment(_ environment: [String: String], forHandlers: Bool = true) throws(AuthError) -> AuthConfiguration {
        let reader = EnvironmentReader(environment)
        let temporaryDirectory = reader.string("TMPDIR") ?? "/tmp"
        var configuration = AuthConfiguration(cacheDirectory: reader.string("AUTH_CACHE_DIR") ?? temporaryDirectory)

        configuration.dataKeys = try DataKeys.fromEnvironment(environment)
        configuration.appleServer = try AppleServerSettings.fromEnvironment(reader, dataKeys: configuration.dataKeys)
        try reader.bool("AUTH_REQUIRE_NONCE", into: &configuration.requireNonce)
        configuration.identityProviders = OIDCProviderSettings.presets(reader, requireNonce: configuration.requireNonce)
            + (try OIDCProviderSettings.fromEnvironment(reader, requireNonce: configuration.requireNonce))
        try reader.integer("AUTH_CLOCK_SKEW", in: 0...3600, into: &configuration.clockSkew)
        try reader.choice("AUTH_LINK_BY_EMAIL", "must be verified or never", into: &configuration.emailLinking)
        if let store = reader.string("AUTH_STORE") {
            if store.hasPrefix("dynamodb:") {
                let table = String(store.dropFirst("dynamodb:".count))
                guard isValidTableName(table) else {
                    throw configError("AUTH_STORE", "dynamodb: needs a table name of 3 to 255 characters [A-Za-z0-9_.-]")
                }
                configuration.store = .dynamoDB(table: table)
            } else {
                configuration.store = .local(directory: store)
            }
        }
        configuration.dynamoDBEndpoint = try reader.url("AUTH_DYNAMODB_ENDPOINT")
        configuration.issuer = reader.string("AUTH_ISSUER") ?? configuration.issuer
        configuration.accessTokenAudience = reader.string("AUTH_ACCESS_TOKEN_AUDIENCE") ?? configuration.issuer
        configuration.signingKeys = try signingKeys(reader)
        try reader.integer("AUTH_ACCESS_TOKEN_TTL", in: 60...86_400, into: &configuration.accessTokenTTL)
        try reader.integer("AUTH_REFRESH_TOKEN_TTL", in: 300...31_536_000, into: &configuration.refreshTokenTTL)
        try reader.integer("AUTH_REFRESH_GRACE", in: 0...3600, into: &configuration.refreshGrace)
        try reader.integer("AUTH_SESSION_MAX_AGE", in: 0...315_360_000, into: &configuration.sessionMaxAge)
        try reader.integer("AUTH_REAUTH_WINDOW", in: 0...86_400, into: &configuration.reauthenticationWindow)
        try reader.integer("AUTH_MAX_SESSIONS", in: 1...1000, into: &configuration.maxSessions)
        try reader.onOff("AUTH_GUEST", into: &configuration.guestsEnabled)
        try reader.integer("AUTH_GUEST_RATE", in: 1...1_000_000, into: &configuration.guestRate)
        try reader.integer("AUTH_GUEST_TTL", in: 3600...31_536_000, into: &configuration.guestTTL)
        try reader.onOff("AUTH_EMAIL", into: &configuration.emailEnabled)
        configuration.passkeys = try PasskeySettings.fromEnvironment(reader)
        configuration.mfa = try MFASettings.fromEnvironment(reader, authIssuer: configuration.issuer)
        try reader.integer("AUTH_OTP_TTL", in: 60...86_400, into: &configuration.otpTTL)
        try reader.integer("AUTH_OTP_RATE", in: 1...1000, into: &configuration.otpRate)
        if let key = reader.string("AUTH_OTP_KEY") {
            guard let bytes = Base64.decoded(key) ?? Base64.urlDecoded(key), bytes.count == 32 else {
                throw configError("AUTH_OTP_KEY", "must be 32 bytes, base64-encoded")
            }
            configuration.otpKey = bytes
        }
        if let sender = reader.string("AUTH_EMAIL_SENDER") {
            if sender == "ses" {
                configuration.emailSender = .ses
            } else if sender.hasPrefix("outbox:"), sender.count > "outbox:".count {
                configuration.emailSender = .outbox(directory: String(sender.dropFirst("outbox:".count)))
            } else {
                throw configError("AUTH_EMAIL_SENDER", "must be outbox:DIR or ses")
            }
        }
        configuration.emailFrom = reader.string("AUTH_EMAIL_FROM")
        if let from = configuration.emailFrom, !from.contains(text: "@") || from.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw configError("AUTH_EMAIL_FROM", "must be an email address")
        }
        configuration.sesEndpoint = try reader.secureURL("AUTH_SES_ENDPOINT")
        try reader.choice("AUTH_CREDENTIALS", "must be local or sts", into: &configuration.credentialsMode)
        configuration.credentialsSecret = reader.string("AUTH_CREDENTIALS_SECRET")
        if let secret = configuration.credentialsSecret, secret.utf8.count < 16 {
            throw configError("AUTH_CREDENTIALS_SECRET", "must be at least 16 characters")
        }
        // Credentials outlive a sign-out until they expire: by default no longer than an access
        // token would, within the 900 s to 43200 s that STS (and the contract) allow.
        configuration.credentialsTTL = try reader.integer("AUTH_CREDENTIALS_TTL", in: 900...43_200)
            ?? min(max(configuration.accessTokenTTL, 900), 43_200)
        configuration.stsRoleARN = reader.string("AUTH_STS_ROLE_ARN")
        configuration.stsEndpoint = try reader.url("AUTH_STS_ENDPOINT")
        configuration.userBucket = reader.string("AUTH_USER_BUCKET")
        configuration.awsRegion = AWSEnvironment.region(reader)
        configuration.awsCredentials = AWSEnvironment.credentials(reader)
        let settings = try LambdaSettings.fromEnvironment(environment)
        configuration.logLevel = settings.logLevel
        configuration.testMode = settings.testMode
        if let now = reader.string("AUTH_NOW") {
            guard configuration.testMode else {
                throw configError("AUTH_NOW", "is honoured only with AUTH_TEST_MODE=1")
            }
            if let epoch = Double(now), epoch.isFinite, epoch >= 0 {
                configuration.fixedNow = epoch
            } else if let instant = ISO8601.parse(now) {
                configuration.fixedNow = instant
            } else {
                throw configError("AUTH_NOW", "must be ISO-8601 or epoch seconds")
            }
        }

        configuration.eventBus = reader.string("AUTH_EVENT_BUS")
        configuration.eventsEndpoint = try reader.url("AWS_ENDPOINT_URL_EVENTS")
        try reader.bool("AUTH_EVENTS_INCLUDE_EMAIL", into: &configuration.eventsIncludeEmail)
        configuration.eventsWebhook = try reader.secureURL("AUTH_EVENTS_WEBHOOK")
        configuration.hookSecret = try hookSecret(reader)
        configuration.hooks = try HookConfiguration.fromEnvironment(reader)
        configuration.lambdaEndpoint = try reader.url("AWS_ENDPOINT_URL_LAMBDA")

        try configuration.validateCombinations(forHandlers: forHandlers)
        return configuration
    }

    func validateCombinations(forHandlers: Bool) throws(AuthError) {
        for preset in identityProviders where preset.name.isBuiltIn {
            try JWKSLocation.validate(preset.jwksURI ?? "", variable: preset.jwksVariable)
        }
        if case .dynamoDB = store, forHandlers {
            if signingKeys == nil {
                throw AuthConfiguration.configError("AUTH_SIGNING_KEYS (or AUTH_SIGNING_KEY)", "is required with AUTH_STORE=dynamodb:")
            }
            if credentialsMode == .local, credentialsSecret == nil {
                throw AuthConfiguration.configError("AUTH_CREDENTIALS_SECRET", "is required with AUTH_STORE=dynamodb: and AUTH_CREDENTIALS=local")
            }
        }
        if emailEnabled, forHandlers {
            if case .dynamoDB = store, otpKey == nil {
                throw AuthConfiguration.configError("AUTH_OTP_KEY", "is required with AUTH_EMAIL=on and AUTH_STORE=dynamodb:")
            }
            if emailSender == .ses, emailFrom == nil {
                throw AuthConfiguration.configError("AUTH_EMAIL_FROM", "is required with AUTH_EMAIL_SENDER=ses")
            }
        }
        if hookSecret == nil, let urlHook = HookType.allCases.first(where: { if case .url? = hooks[$0]?.target { true } else { false } }) {
            throw AuthConfiguration.configError("AUTH_HOOK_SECRET", "is required with a url hook in AUTH_HOOKS (\(urlHook.rawValue))")
        }
        if mfa.isEnabled, forHandlers, case .dynamoDB = store, dataKeys == nil {
            throw AuthConfiguration.configError("AUTH_DATA_KEYS (or AUTH_DATA_KEY)", "is required with AUTH_MFA=optional and AUTH_STORE=dynamodb:: second-factor secrets are sealed under it")
        }
        if credentialsMode == .sts {
            guard let role = stsRoleARN, role.hasPrefix("arn:") else {
                throw AuthConfiguration.configError("AUTH_STS_ROLE_ARN", "must be a role ARN with AUTH_CREDENTIALS=sts")
            }
            guard let bucket = userBucket, !bucket.isEmpty else {
                throw AuthConfiguration.configError("AUTH_USER_BUCKET", "is required with AUTH_CREDENTIALS=sts")
            }
        }
    }

    /// One of the four forms: the key set inline or in a file, or the one key inline or in a file.
    /// Two forms at once would leave it unclear which keys sign, so that is refused.
    static func signingKeys(_ reader: EnvironmentReader) throws(AuthError) -> AccessTokenKeySet? {
        let forms = ["AUTH_SIGNING_KEYS", "AUTH_SIGNING_KEYS_FILE", "AUTH_SIGNING_KEY", "AUTH_SIGNING_KEY_FILE"]
        let set = forms.filter { reader.string($0) != nil }
        guard let variable = set.first else { return nil }
        guard set.count == 1 else {
            throw configError(set.joined(separator: " and "), "are \(set.count == 2 ? "both" : "all") set; set only one of \(forms.joined(separator: ", "))")
        }
        var pem = reader.string(variable)!
        if variable.hasSuffix("_FILE") {
            do {
                pem = String(decoding: try FileSystem.readFile(pem, limit: 64 << 10), as: UTF8.self)
            } catch {
                throw configError(variable, "cannot be read (\(error))")
            }
        }
        let keys = try AccessTokenKeySet.parse(pem: pem, variable: variable)
        if !variable.hasPrefix("AUTH_SIGNING_KEYS"), keys.keys.count > 1 {
            throw configError(variable, "holds \(keys.keys.count) keys; several keys go in AUTH_SIGNING_KEYS")
        }
        // The template sets RS256: behind API Gateway's JWT authorizer an ES256 signing key would
        // make every protected route answer 401, so it is refused at start instead.
        if let required = reader.string("AUTH_SIGNING_ALGORITHM") {
            guard let algorithm = JWSAlgorithm(rawValue: required), AccessTokenCheck.algorithms.contains(algorithm) else {
                throw configError("AUTH_SIGNING_ALGORITHM", "must be RS256 or ES256")
            }
            guard keys.signing.algorithm == algorithm else {
                throw AuthError(.configError, "\(variable): its first key signs \(keys.signing.algorithm.rawValue), but AUTH_SIGNING_ALGORITHM is \(required); put an \(required) key first (authctl keys generate --alg \(required))")
            }
        }
        return keys
    }

    static func hookSecret(_ reader: EnvironmentReader) throws(AuthError) -> [UInt8]? {
        guard let text = reader.string("AUTH_HOOK_SECRET") else { return nil }
        guard text.hasPrefix("whsec_"), let bytes = Base64.decoded(String(text.dropFirst(6))), bytes.count >= 24 else {
            throw configError("AUTH_HOOK_SECRET", "must be whsec_ followed by the base64 of at least 24 bytes")
        }
        return bytes
    }

    static func configError(_ variable: String, _ problem: String) -> AuthError {
        AuthError(.configError, "\(variable) \(problem)")
    }

    static func isValidTableName(_ name: String) -> Bool {
        (3...255).contains(name.utf8.count) && name.utf8.allSatisfy { $0.isASCIIAlphanumeric(or: "_-.") }
    }
}
