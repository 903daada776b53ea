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

    /// Sign in with Apple's back channel (code exchange, revocation); nil: off.
    public var appleServer: AppleServerSettings?
    /// AUTH_DATA_KEYS (or AUTH_DATA_KEY): what seals values at rest; nil when neither is set.
    public var dataKeys: DataKeys?
    public var requireNonce = false
    /// The OpenID Connect providers: Google's and Apple's presets (AUTH_GOOGLE_*, AUTH_APPLE_*), then
    /// those of AUTH_OIDC_PROVIDERS (or _FILE) (contract section 14).
    public var identityProviders: [OIDCProviderSettings] = []
    /// Those of AUTH_OIDC_PROVIDERS alone.
    public var oidcProviders: [OIDCProviderSettings] { identityProviders.filter { !$0.name.isBuiltIn } }
    public var clockSkew: Int64 = 60
    public var emailLinking: EmailLinking = .verified
    public var store: StoreLocation = .local(directory: ".auth-store")
    public var dynamoDBEndpoint: String?
    public var cacheDirectory: String
    public var issuer = AuthConfiguration.defaultIssuer
    public static let defaultIssuer = "lambda-auth"
    /// `aud` of our access tokens, checked by every caller check; defaults to the issuer.
    public var accessTokenAudience = "lambda-auth"
    /// The access-token keys (`AUTH_SIGNING_KEYS`, or the one `AUTH_SIGNING_KEY`); nil: the dev
    /// key kept in the local store.
    public var signingKeys: AccessTokenKeySet?
    public var accessTokenTTL: Int64 = 900
    /// How long a revocation is listed for access tokens (contract section 20): as long as one
    /// of the ended session's tokens can still be accepted, by its `exp` plus the clock skew.
    public var revocationRetention: Int64 { accessTokenTTL + clockSkew }
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
    /// AUTH_MFA, AUTH_MFA_ISSUER: second factors (contract section 21).
    public var mfa = MFASettings(issuer: MFASettings.defaultIssuer(AuthConfiguration.defaultIssuer))
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
    /// AUTH_CREDENTIALS_TTL; unset, the access tokens' TTL within 900 to 43200 (fromEnvironment).
    public var credentialsTTL: Int64 = 900
    public var stsRoleARN: String?
    public var stsEndpoint: String?
    public var userBucket: String?
    public var awsRegion: String?
    /// AUTH_EVENT_BUS and AWS_ENDPOINT_URL_EVENTS: where the events handler puts its events.
    public var eventBus: String?
    public var eventsEndpoint: String?
    /// AUTH_EVENTS_INCLUDE_EMAIL: events carry emails only when asked (contract section 22).
    public var eventsIncludeEmail = false
    /// AUTH_EVENTS_WEBHOOK: where `serve` posts the local store's events.
    public var eventsWebhook: String?
    /// AUTH_HOOK_SECRET, `whsec_` + base64 (at least 24 bytes): the key of Standard Webhooks
    /// signatures (contract section 19), decoded.
    public var hookSecret: [UInt8]?
    /// AUTH_HOOKS (or AUTH_HOOKS_FILE): the app's hooks, by type (contract section 19).
    public var hooks: [HookType: HookSettings] = [:]
    /// AWS_ENDPOINT_URL_LAMBDA: where Lambda hooks are invoked (default: the region's endpoint).
    public var lambdaEndpoint: String?
    public var awsCredentials: AWSCredentials?
    public var logLevel: Logger.Level = .info
    public var testMode = false
    /// With testMode only: the fixed clock for replays.
    public var fixedNow: Double?

    public var clock: any WallClock {
        if let fixedNow { return FixedClock(fixedNow) }
        return SystemClock()
    }
}
