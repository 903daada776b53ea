import Foundation

/// Every failure the client reports: the server's error body (its contract code, HTTP status,
/// whether a retry may succeed, message), or the client's own (`NETWORK_ERROR`, `NOT_SIGNED_IN`,
/// `INVALID_RESPONSE`, `STORAGE_ERROR`).
public struct AuthClientError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var status: Int
    public var retryable: Bool
    public var message: String
    /// Seconds the server asked to wait (`RATE_LIMITED`).
    public var retryAfter: Int?
    /// `MFA_REQUIRED`: the user has a second factor; finish with `AuthClient.completeSignIn`.
    public var mfaChallenge: MFAChallenge?

    public init(code: String, status: Int, retryable: Bool, message: String, retryAfter: Int? = nil) {
        self.code = code
        self.status = status
        self.retryable = retryable
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code) (\(status)): \(message)" }

    /// The app's own hook refused this sign-up or sign-in (`HOOK_DENIED`): its message, written by
    /// the app's backend for its users ("only example.org addresses can sign up"), to show as it
    /// is. Retrying does not help; nil for every other failure.
    public var hookDenial: String? { code == "HOOK_DENIED" ? message : nil }

    /// A refresh answered so: the session is over, locally too.
    var endsTheSession: Bool {
        ["REFRESH_TOKEN_REUSED", "REFRESH_TOKEN_REVOKED", "REFRESH_TOKEN_EXPIRED", "REFRESH_TOKEN_NOT_FOUND"].contains(code)
    }

    static func network(_ error: any Error) -> AuthClientError {
        AuthClientError(code: "NETWORK_ERROR", status: 0, retryable: true, message: "the server could not be reached: \(error)")
    }

    static let notSignedIn = AuthClientError(code: "NOT_SIGNED_IN", status: 0, retryable: false, message: "no user is signed in")

    static func invalidResponse(_ detail: String) -> AuthClientError {
        AuthClientError(code: "INVALID_RESPONSE", status: 0, retryable: false, message: "the server's answer is not the contract's: \(detail)")
    }

    static func storage(_ error: any Error) -> AuthClientError {
        AuthClientError(code: "STORAGE_ERROR", status: 0, retryable: true, message: "the session could not be stored: \(error)")
    }
}

/// How often and how patiently a retryable failure is tried again: capped exponential backoff
/// with full jitter, so that many clients coming back after an outage do not arrive together.
public struct RetryPolicy: Sendable {
    public var attempts: Int
    public var baseDelay: Double
    public var maximumDelay: Double

    public init(attempts: Int = 4, baseDelay: Double = 0.25, maximumDelay: Double = 4) {
        self.attempts = max(1, attempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    func delay(beforeRetry retry: Int) -> Double {
        let ceiling = min(maximumDelay, baseDelay * Double(1 << min(retry, 20)))
        return Double.random(in: 0...ceiling)
    }
}
