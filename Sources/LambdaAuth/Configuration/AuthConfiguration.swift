import Logging

/// Everything the handlers read from their environment (contract section 5), parsed once at start.
/// An invalid value is a CONFIG_ERROR naming the variable, never a silent default.
public struct AuthConfiguration: Sendable {
    public enum StoreLocation: Sendable, Equatable {
        case local(directory: String)
        case dynamoDB(table: String)
    }

    public enum EmailLinking: String, Sendable { case verified, never }
    public enum CredentialsMode: String, Sendable { case local, sts }

    public struct Provider: Sendable {
        public var name: ProviderName
        /// Empty: the provider is known but not configured (PROVIDER_NOT_CONFIGURED).
        public var audiences: [String]
        public var jwksURL: String
    }

    public var google: Provider
    public var apple: Provider
    /// Sign in with Apple's back channel (code exchange, revocation); nil: off.
    public var appleServer: AppleServerSettings?
    /// AUTH_DATA_KEYS (or AUTH_DATA_KEY): what seals values at rest; nil when neither is set.
    public var dataKeys: DataKeys?
    public var requireNonce = false
    /// AUTH_OIDC_PROVIDERS (or _FILE): the configured OpenID Connect providers (contract section 14).
    public var oidcProviders: [OIDCProviderSettings] = []
    public var clockSkew: Int64 = 60
    public var emailLinking: EmailLinking = .verified
    public var store: StoreLocation = .local(directory: ".auth-store")
    public var dynamoDBEndpoint: String?
    public var cacheDirectory: String
    public var issuer = "lambda-auth"
    /// `aud` of our access tokens, checked by every caller check; defaults to the issuer.
    public var accessTokenAudience = "lambda-auth"
    /// The access-token keys (`AUTH_SIGNING_KEYS`, or the one `AUTH_SIGNING_KEY`); nil: the dev
    /// key kept in the local store.
    public var signingKeys: AccessTokenKeySet?
    public var accessTokenTTL: Int64 = 900
    public var refreshTokenTTL: Int64 = 2_592_000
    public var refreshGrace: Int64 = 30
    /// AUTH_SESSION_MAX_AGE: no refresh succeeds once a session is this old (0: no limit).
    public var sessionMaxAge: Int64 = 7_776_000
    /// A session younger than this may delete its account without presenting an ID token again.
    public var reauthenticationWindow: Int64 = 300
    public var maxSessions = 5
    /// AUTH_GUEST: `signin` with provider `guest` creates a user with no identity.
    public var guestsEnabled = false
    /// AUTH_GUEST_RATE: guest creations per source IP per hour.
    public var guestRate = 30
    /// AUTH_GUEST_TTL: seconds a guest lives past its last sign-in or refresh.
    public var guestTTL: Int64 = 2_592_000
    /// AUTH_EMAIL: sign-in with a code sent by email (otp-start, provider `email`).
    public var emailEnabled = false
    /// AUTH_PASSKEY_*: nil (passkeys off) unless AUTH_PASSKEY_RP_ID is set.
    public var passkeys: PasskeySettings?
    /// AUTH_OTP_TTL: seconds a code stays valid.
    public var otpTTL: Int64 = 600
    /// AUTH_OTP_RATE: codes per address per hour.
    public var otpRate = 5
    /// AUTH_OTP_KEY (32 bytes, base64); nil: the dev key kept in the local store.
    public var otpKey: [UInt8]?
    public enum EmailSenderKind: Sendable, Equatable {
        case outbox(directory: String)
        case ses
    }
    /// AUTH_EMAIL_SENDER: `outbox:DIR` or `ses`.
    public var emailSender: EmailSenderKind = .outbox(directory: ".auth-dev/outbox")
    /// AUTH_EMAIL_FROM: the sender address (a verified SES identity with `ses`).
    public var emailFrom: String?
    /// AUTH_SES_ENDPOINT: https://, or http:// to a loopback address (tests).
    public var sesEndpoint: String?
    public var credentialsMode: CredentialsMode = .local
    /// nil: the dev secret kept in the local store.
    public var credentialsSecret: String?
    public var credentialsTTL: Int64 = 3600
    public var stsRoleARN: String?
    public var stsEndpoint: String?
    public var userBucket: String?
    public var awsRegion: String?
    public var awsCredentials: AWSCredentials?
    public var logLevel: Logger.Level = .info
    public var testMode = false
    /// With testMode only: the fixed clock for replays.
    public var fixedNow: Double?

    public func provider(_ name: ProviderName) -> Provider {
        name == .google ? google : apple
    }

    public var clock: any WallClock {
        if let fixedNow { return FixedClock(fixedNow) }
        return SystemClock()
    }

    /// - Parameter forHandlers: false for tools that only reach the store (authctl): they need no
    ///   signing key or credentials secret, which the handlers require with `dynamodb:`.
    public static func fromEnvironment(_ environment: [String: String], forHandlers: Bool = true) throws(AuthError) -> AuthConfiguration {
        let reader = EnvironmentReader(environment)
        let temporaryDirectory = reader.string("TMPDIR") ?? "/tmp"
        var configuration = AuthConfiguration(
            google: Provider(
                name: .google,
                audiences: reader.list("AUTH_GOOGLE_AUDIENCES"),
                jwksURL: reader.string("AUTH_GOOGLE_JWKS_URL") ?? "https://www.googleapis.com/oauth2/v3/certs"),
            apple: Provider(
                name: .apple,
                audiences: reader.list("AUTH_APPLE_AUDIENCES"),
                jwksURL: reader.string("AUTH_APPLE_JWKS_URL") ?? "https://appleid.apple.com/auth/keys"),
            cacheDirectory: reader.string("AUTH_CACHE_DIR") ?? temporaryDirectory)

        configuration.dataKeys = try DataKeys.fromEnvironment(environment)
        configuration.appleServer = try AppleServerSettings.fromEnvironment(reader, dataKeys: configuration.dataKeys)
        configuration.requireNonce = try reader.bool("AUTH_REQUIRE_NONCE") ?? false
        configuration.oidcProviders = try OIDCProviderSettings.fromEnvironment(reader, requireNonce: configuration.requireNonce)
        configuration.clockSkew = try reader.integer("AUTH_CLOCK_SKEW", in: 0...3600) ?? 60
        if let linking = reader.string("AUTH_LINK_BY_EMAIL") {
            guard let value = EmailLinking(rawValue: linking) else {
                throw configError("AUTH_LINK_BY_EMAIL", "must be verified or never")
            }
            configuration.emailLinking = value
        }
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
        configuration.issuer = reader.string("AUTH_ISSUER") ?? "lambda-auth"
        configuration.accessTokenAudience = reader.string("AUTH_ACCESS_TOKEN_AUDIENCE") ?? configuration.issuer
        configuration.signingKeys = try signingKeys(reader)
        configuration.accessTokenTTL = try reader.integer("AUTH_ACCESS_TOKEN_TTL", in: 60...86_400) ?? 900
        configuration.refreshTokenTTL = try reader.integer("AUTH_REFRESH_TOKEN_TTL", in: 300...31_536_000) ?? 2_592_000
        configuration.refreshGrace = try reader.integer("AUTH_REFRESH_GRACE", in: 0...3600) ?? 30
        configuration.sessionMaxAge = try reader.integer("AUTH_SESSION_MAX_AGE", in: 0...315_360_000) ?? 7_776_000
        configuration.reauthenticationWindow = try reader.integer("AUTH_REAUTH_WINDOW", in: 0...86_400) ?? 300
        configuration.maxSessions = Int(try reader.integer("AUTH_MAX_SESSIONS", in: 1...1000) ?? 5)
        configuration.guestsEnabled = try reader.onOff("AUTH_GUEST") ?? false
        configuration.guestRate = Int(try reader.integer("AUTH_GUEST_RATE", in: 1...1_000_000) ?? 30)
        configuration.guestTTL = try reader.integer("AUTH_GUEST_TTL", in: 3600...31_536_000) ?? 2_592_000
        configuration.emailEnabled = try reader.onOff("AUTH_EMAIL") ?? false
        configuration.passkeys = try passkeySettings(reader)
        configuration.otpTTL = try reader.integer("AUTH_OTP_TTL", in: 60...86_400) ?? 600
        configuration.otpRate = Int(try reader.integer("AUTH_OTP_RATE", in: 1...1000) ?? 5)
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
        if let from = configuration.emailFrom, !from.contains("@") || from.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw configError("AUTH_EMAIL_FROM", "must be an email address")
        }
        configuration.sesEndpoint = try reader.secureURL("AUTH_SES_ENDPOINT")
        if let mode = reader.string("AUTH_CREDENTIALS") {
            guard let value = CredentialsMode(rawValue: mode) else {
                throw configError("AUTH_CREDENTIALS", "must be local or sts")
            }
            configuration.credentialsMode = value
        }
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

        try configuration.validateCombinations(forHandlers: forHandlers)
        return configuration
    }

    func validateCombinations(forHandlers: Bool) throws(AuthError) {
        for provider in [google, apple] {
            try JWKSLocation.validate(provider.jwksURL, variable: "AUTH_\(provider.name.rawValue.uppercased())_JWKS_URL")
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

    static func configError(_ variable: String, _ problem: String) -> AuthError {
        AuthError(.configError, "\(variable) \(problem)")
    }

    static func isValidTableName(_ name: String) -> Bool {
        (3...255).contains(name.utf8.count) && name.utf8.allSatisfy { $0.isASCIIAlphanumeric(or: "_-.") }
    }
}

extension AuthConfiguration {
    /// Contract section 15. The RP ID is a host name (WebAuthn Level 3 §5.1.6: a registrable
    /// domain suffix of the origins' hosts, never a URL); origins default to `https://` + the RP ID.
    static func passkeySettings(_ reader: EnvironmentReader) throws(AuthError) -> PasskeySettings? {
        let variables = ["AUTH_PASSKEY_RP_NAME", "AUTH_PASSKEY_ORIGINS", "AUTH_PASSKEY_USER_VERIFICATION", "AUTH_PASSKEY_OPTIONS_RATE"]
        guard let rpID = reader.string("AUTH_PASSKEY_RP_ID") else {
            if let stray = variables.first(where: { reader.string($0) != nil }) {
                throw configError(stray, "needs AUTH_PASSKEY_RP_ID (passkeys are off without it)")
            }
            return nil
        }
        let hostBytes = Array(rpID.utf8)
        guard hostBytes.count <= 253, hostBytes.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x2E }),
              hostBytes.first != 0x2E, hostBytes.last != 0x2E else {
            throw configError("AUTH_PASSKEY_RP_ID", "must be a lowercase host name such as example.com")
        }
        let origins = reader.list("AUTH_PASSKEY_ORIGINS")
        for origin in origins where !(origin.hasPrefix("https://") || origin.hasPrefix("http://localhost") || origin.hasPrefix("android:apk-key-hash:"))
            || origin.hasSuffix("/") {
            throw configError("AUTH_PASSKEY_ORIGINS", "each origin is https://HOST[:PORT] (no path), http://localhost[:PORT] or android:apk-key-hash:…")
        }
        let verification: Bool
        switch reader.string("AUTH_PASSKEY_USER_VERIFICATION") {
        case nil, "required"?: verification = true
        case "preferred"?: verification = false
        default: throw configError("AUTH_PASSKEY_USER_VERIFICATION", "must be required or preferred")
        }
        let name = reader.string("AUTH_PASSKEY_RP_NAME") ?? rpID
        guard name.utf8.count <= 64 else { throw configError("AUTH_PASSKEY_RP_NAME", "must be at most 64 bytes") }
        let rate = Int(try reader.integer("AUTH_PASSKEY_OPTIONS_RATE", in: 1...1_000_000) ?? 1000)
        return PasskeySettings(relyingPartyID: rpID, relyingPartyName: name, origins: origins.isEmpty ? ["https://\(rpID)"] : origins,
                               userVerificationRequired: verification, loginOptionsPerSourceIP: rate)
    }
}

/// Reads typed values; an empty variable counts as unset.
struct EnvironmentReader {
    let environment: [String: String]
    init(_ environment: [String: String]) { self.environment = environment }

    func string(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    func list(_ name: String) -> [String] {
        (string(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
    }

    func bool(_ name: String) throws(AuthError) -> Bool? {
        guard let value = string(name) else { return nil }
        switch value.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw AuthConfiguration.configError(name, "must be true or false")
        }
    }

    func integer(_ name: String, in range: ClosedRange<Int64>) throws(AuthError) -> Int64? {
        guard let value = string(name) else { return nil }
        guard let number = Int64(value), range.contains(number) else {
            throw AuthConfiguration.configError(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// A switch (AUTH_GUEST, AUTH_EMAIL): `on` or `off`, in any case.
    func onOff(_ name: String) throws(AuthError) -> Bool? {
        guard let value = string(name) else { return nil }
        switch value.lowercased() {
        case "on": return true
        case "off": return false
        default: throw AuthConfiguration.configError(name, "must be on or off")
        }
    }

    /// An https:// URL, or http:// to a loopback address only: what secrets, email codes and
    /// Apple's tokens travel to, never in the clear across a network.
    func secureURL(_ name: String) throws(AuthError) -> String? {
        guard let value = string(name) else { return nil }
        if value.hasPrefix("http://") {
            guard JWKSLocation.isLoopback(value) else {
                throw AuthConfiguration.configError(name, "may use http:// only for a loopback address")
            }
        } else if !value.hasPrefix("https://") || value.count == "https://".count {
            throw AuthConfiguration.configError(name, "must be an https:// URL, or http:// to a loopback address")
        }
        return value
    }

    func url(_ name: String) throws(AuthError) -> String? {
        guard let value = string(name) else { return nil }
        guard value.hasPrefix("http://") || value.hasPrefix("https://") else {
            throw AuthConfiguration.configError(name, "must be an http:// or https:// URL")
        }
        return value
    }
}
