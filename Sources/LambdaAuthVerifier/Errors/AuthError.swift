/// Every error code of the contract (section 2), with its HTTP status and retryability.
/// This is the one place where a failure becomes a status.
public enum ErrorCode: String, Sendable, CaseIterable {
    case invalidRequest = "INVALID_REQUEST"
    case unsupportedProvider = "UNSUPPORTED_PROVIDER"
    case providerNotConfigured = "PROVIDER_NOT_CONFIGURED"
    case malformedToken = "MALFORMED_TOKEN"
    case unsupportedAlgorithm = "UNSUPPORTED_ALGORITHM"
    case unknownKeyID = "UNKNOWN_KEY_ID"
    case invalidSignature = "INVALID_SIGNATURE"
    case invalidIssuer = "INVALID_ISSUER"
    case invalidAudience = "INVALID_AUDIENCE"
    case tokenExpired = "TOKEN_EXPIRED"
    case tokenNotYetValid = "TOKEN_NOT_YET_VALID"
    case nonceMismatch = "NONCE_MISMATCH"
    case nonceRequired = "NONCE_REQUIRED"
    case accessTokenInvalid = "ACCESS_TOKEN_INVALID"
    /// A valid access token whose session (or user) was ended: signed out, revoked, evicted,
    /// refused for reuse, deleted (contract section 20).
    case accessTokenRevoked = "ACCESS_TOKEN_REVOKED"
    case refreshTokenNotFound = "REFRESH_TOKEN_NOT_FOUND"
    case refreshTokenExpired = "REFRESH_TOKEN_EXPIRED"
    case refreshTokenRevoked = "REFRESH_TOKEN_REVOKED"
    case refreshTokenReused = "REFRESH_TOKEN_REUSED"
    case identityLinkedToOtherUser = "IDENTITY_LINKED_TO_OTHER_USER"
    case providerAlreadyLinked = "PROVIDER_ALREADY_LINKED"
    case lastIdentity = "LAST_IDENTITY"
    case configError = "CONFIG_ERROR"
    case `internal` = "INTERNAL"
    case jwksUnavailable = "JWKS_UNAVAILABLE"
    case storeUnavailable = "STORE_UNAVAILABLE"
    case credentialsUnavailable = "CREDENTIALS_UNAVAILABLE"
    case sessionNotFound = "SESSION_NOT_FOUND"
    case reauthenticationRequired = "REAUTHENTICATION_REQUIRED"
    case rateLimited = "RATE_LIMITED"
    case providerUnavailable = "PROVIDER_UNAVAILABLE"
    case notFound = "NOT_FOUND"
    /// signin with an Apple authorizationCode that Apple refuses (invalid_grant) or that belongs
    /// to another Apple account than the ID token.
    case authorizationCodeInvalid = "AUTHORIZATION_CODE_INVALID"
    case otpInvalid = "OTP_INVALID"
    case otpExpired = "OTP_EXPIRED"
    case otpAttemptsExceeded = "OTP_ATTEMPTS_EXCEEDED"
    /// A passkey ceremony failed a WebAuthn check (the message names it), or named an unknown
    /// credential (never said apart from a bad signature).
    case passkeyInvalid = "PASSKEY_INVALID"
    /// A WebAuthn challenge that is unknown, already used or past its 300 s.
    case challengeExpired = "CHALLENGE_EXPIRED"
    case passkeyNotFound = "PASSKEY_NOT_FOUND"
    case passkeyAlreadyRegistered = "PASSKEY_ALREADY_REGISTERED"
    case passkeyLimitReached = "PASSKEY_LIMIT_REACHED"
    /// The app's sign-up or sign-in hook said no (contract section 19); the message is the hook's.
    case hookDenied = "HOOK_DENIED"
    /// A hook whose `onError` is `deny` gave no usable answer: nothing was written, try again.
    case hookUnavailable = "HOOK_UNAVAILABLE"
    /// A sign-in of a user with an active second factor: the error object carries `mfaToken`
    /// and `factors` (contract section 21).
    case mfaRequired = "MFA_REQUIRED"
    /// An action that needs a session proven with the second factor, from an aal1 one.
    case aal2Required = "AAL2_REQUIRED"
    case mfaCodeInvalid = "MFA_CODE_INVALID"
    /// An mfaToken that is unknown, used, expired, spent by wrong codes or of another device.
    case mfaTokenInvalid = "MFA_TOKEN_INVALID"
    case mfaAlreadyEnrolled = "MFA_ALREADY_ENROLLED"
    case mfaNotEnrolled = "MFA_NOT_ENROLLED"

    public var status: Int {
        switch self {
        case .invalidRequest, .unsupportedProvider, .providerNotConfigured, .mfaNotEnrolled: return 400
        case .mfaRequired, .aal2Required: return 403
        case .sessionNotFound, .notFound, .passkeyNotFound: return 404
        case .hookDenied: return 403
        case .rateLimited: return 429
        case .providerUnavailable: return 502
        case .identityLinkedToOtherUser, .providerAlreadyLinked, .lastIdentity, .passkeyAlreadyRegistered, .passkeyLimitReached,
             .mfaAlreadyEnrolled: return 409
        case .configError, .internal: return 500
        case .jwksUnavailable, .storeUnavailable, .credentialsUnavailable, .hookUnavailable: return 503
        default: return 401
        }
    }

    public var isRetryable: Bool { status == 503 || self == .rateLimited || self == .providerUnavailable }
}

/// The product's one error type: what a caller sees is exactly `code`, `message`, `status`,
/// `retryable`. Messages must never contain a token or secret; `detail` is for the log only
/// (and must not contain them either).
public struct AuthError: Error, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String
    public let detail: String?
    /// Overrides the code's default, for cases where the upstream says otherwise (STS).
    public let retryableOverride: Bool?
    /// RATE_LIMITED: seconds until the caller may try again (`retryAfter` in the body, and the
    /// `retry-after` header on HTTP events).
    public var retryAfter: Int64?
    /// Who the failure concerned, where known (the presented refresh token's user and session, a
    /// verified caller): for the request's event line only (contract section 18), never answered.
    public var userID: String?
    public var sessionID: String?
    /// Members the contract adds to this error's object (MFA_REQUIRED's `mfaToken` and `factors`).
    public var details: [String: JSONValue] = [:]

    public init(_ code: ErrorCode, _ message: String, detail: String? = nil, retryable: Bool? = nil) {
        self.code = code
        self.message = message
        self.detail = detail
        self.retryableOverride = retryable
    }

    public var status: Int { code.status }

    /// The same failure, naming `userID` and `sessionID` where it did not name its own already.
    public func about(userID: String?, sessionID: String?) -> AuthError {
        var named = self
        named.userID = self.userID ?? userID
        named.sessionID = self.sessionID ?? sessionID
        return named
    }
    public var retryable: Bool { retryableOverride ?? code.isRetryable }
    public var description: String { "\(code.rawValue): \(message)" }

    public var body: JSONValue {
        var error: [String: JSONValue] = ["code": .string(code.rawValue), "message": .string(message),
                                          "status": .number(status), "retryable": .bool(retryable)]
        if let retryAfter { error["retryAfter"] = .number(retryAfter) }
        error.merge(details) { kept, _ in kept }
        return ["error": .object(error)]
    }

    /// Our own failure, not the caller's: INTERNAL with the one message a caller ever sees of it;
    /// what went wrong goes to the log alone.
    public static func internalError(_ detail: String? = nil) -> AuthError {
        AuthError(.internal, "internal error", detail: detail)
    }

    /// Maps any error thrown below the flows to the contract's error; unknown ones become INTERNAL
    /// with their description kept for the log only.
    public static func from(_ error: any Error) -> AuthError {
        if let error = error as? AuthError { return error }
        if let convertible = error as? any AuthErrorConvertible { return convertible.authError }
        return .internalError(String(describing: error))
    }
}

/// Typed errors of the lower layers (tables, HTTP, credentials) say how they surface.
public protocol AuthErrorConvertible: Error {
    var authError: AuthError { get }
}
