import Crypto
import Logging

extension RateLimitScope {
    /// Codes sent to one address per hour (AUTH_OTP_RATE).
    public static let oneTimeCodesPerEmail = RateLimitScope("otp-email")
    /// Codes requested from one source IP per hour (30).
    public static let oneTimeCodesPerIP = RateLimitScope("otp-ip")
}

/// Sign-in with a code sent by email (contract section 10): `otp-start` issues and sends a code,
/// `signin`/`link-provider` with provider `email` prove the address with it.
///
/// Guessing bound: a code dies after 5 wrong attempts and at most AUTH_OTP_RATE codes are issued
/// per address per hour, so an attacker gets at most 5 × AUTH_OTP_RATE guesses per address per
/// hour (25 by default: a chance of 25 in a million an hour), however many IPs they use.
struct OneTimeCodeFlow: Sendable {
    let enabled: Bool
    let store: OneTimeCodeStore
    /// AUTH_OTP_KEY, or the dev key kept in the local store; `create` only on the issuing path.
    let key: @Sendable (_ create: Bool) throws(AuthError) -> SymmetricKey?
    let sender: any EmailSender
    let limiter: any RateLimiting
    let perEmail: RateLimit
    let perSourceIP: RateLimit
    let ttl: Int64
    let clock: any WallClock
    let random: any RandomSource

    func requireEnabled() throws(AuthError) {
        guard enabled else { throw AuthError(.providerNotConfigured, "email sign-in is off (AUTH_EMAIL)") }
    }

    /// Issues a code and sends it; returns its lifetime. The same writes whether or not a user
    /// has the address (no user is looked up), so the answer tells nothing about accounts.
    /// Limits are counted first (source IP, then address); a delivery failure withdraws the code.
    func start(_ email: EmailAddress, origin: RequestOrigin, logger: Logger) throws(AuthError) -> Int64 {
        try requireEnabled()
        let sourceKey = try origin.rateLimitKey()
        let now = clock.nowSeconds
        do {
            if let sourceKey { try limiter.consume(.oneTimeCodesPerIP, key: sourceKey, limit: perSourceIP, now: now) }
            try limiter.consume(.oneTimeCodesPerEmail, key: email.rateLimitKey, limit: perEmail, now: now)
        } catch where error.code == .rateLimited {
            logger.warning("one-time code refused: rate limit", metadata: ["sourceIp": .string(sourceKey ?? "-")])
            throw error
        }
        guard let key = try key(true) else {
            throw AuthError(.configError, "AUTH_OTP_KEY is not set")
        }
        let code = OneTimeCode.generate(random)
        let codeHash = OneTimeCode.hash(code, for: email, key: key)
        try store.put(email, codeHash: codeHash, now: now, expiresAt: now + ttl)
        do {
            try sender.send(OneTimeCodeMessage.make(to: email, code: code, ttl: ttl))
        } catch {
            do {
                try store.withdraw(email, codeHash: codeHash)
            } catch let withdrawal {
                logger.error("could not withdraw an undelivered one-time code", metadata: ["code": .string(withdrawal.code.rawValue)])
            }
            throw error
        }
        logger.info("one-time code sent")
        return ttl
    }

    /// The email identity the code proves, or OTP_INVALID / OTP_EXPIRED / OTP_ATTEMPTS_EXCEEDED.
    /// A used code is gone, so presenting it again is OTP_EXPIRED, as for a replaced one.
    func verify(_ email: EmailAddress, code: String, logger: Logger) throws(AuthError) -> VerifiedIdentity {
        let checked = try check(email, code: code, logger: logger)
        try checked.use()
        return checked.identity
    }

    /// A right code, not used yet: `use` spends it. A sign-in uses it only once the app's hooks
    /// have let the sign-in go on, so that a refused one leaves the store as it was (contract
    /// section 19). A wrong code counts against its attempts here and now.
    struct CheckedCode: Sendable {
        let identity: VerifiedIdentity
        let use: @Sendable () throws(AuthError) -> Void
    }

    func check(_ email: EmailAddress, code: String, logger: Logger) throws(AuthError) -> CheckedCode {
        try requireEnabled()
        try OneTimeCode.validate(code)
        let now = clock.nowSeconds
        guard let key = try key(false), let live = try store.live(email, now: now) else { throw OneTimeCodeFlow.expired }
        let presented = Array(OneTimeCode.hash(code, for: email, key: key).utf8)
        if constantTimeEqual(presented, Array(live.codeHash.utf8)) {
            guard live.attempts < OneTimeCodeStore.maximumAttempts else { throw OneTimeCodeFlow.attemptsExceeded }
            let identity = VerifiedIdentity(provider: .email, subject: email.normalized, email: email.normalized, emailVerified: true,
                                            isPrivateEmail: false, name: nil, picture: nil, claims: [:])
            return CheckedCode(identity: identity) { [self] () throws(AuthError) in
                guard try store.consume(email, live, now: now) else { throw try refusalAfterLostRace(email, live, now: now) }
            }
        }
        // One of the codes this one replaced: the user typed an older message's code.
        if live.replacedHashes.contains(where: { constantTimeEqual(presented, Array($0.utf8)) }) { throw OneTimeCodeFlow.expired }
        guard live.attempts < OneTimeCodeStore.maximumAttempts else { throw OneTimeCodeFlow.attemptsExceeded }
        guard try store.recordWrongAttempt(email, live, now: now) else { throw try refusalAfterLostRace(email, live, now: now) }
        logger.info("wrong one-time code", metadata: ["attempt": .number(live.attempts + 1)])
        throw AuthError(.otpInvalid, "the code is wrong")
    }

    /// The code changed between the read and the write: used or replaced (expired), or its
    /// attempts ran out (exceeded).
    func refusalAfterLostRace(_ email: EmailAddress, _ read: OneTimeCodeStore.Live, now: Int64) throws(AuthError) -> AuthError {
        guard let current = try store.live(email, now: now), current.codeHash == read.codeHash else { return OneTimeCodeFlow.expired }
        return current.attempts >= OneTimeCodeStore.maximumAttempts ? OneTimeCodeFlow.attemptsExceeded : OneTimeCodeFlow.expired
    }

    static let expired = AuthError(.otpExpired, "the code has expired, was replaced by a newer one or was already used; request a new code")
    static let attemptsExceeded = AuthError(.otpAttemptsExceeded, "too many wrong attempts; request a new code")
}

/// The message a code travels in: plain text, saying what the code is for and for how long.
enum OneTimeCodeMessage {
    static func make(to email: EmailAddress, code: String, ttl: Int64) -> EmailMessage {
        let minutes = max(1, ttl / 60)
        return EmailMessage(
            to: email.normalized,
            subject: "Your sign-in code: \(code)",
            body: """
            Your sign-in code is \(code)

            Enter it in the app to sign in. It expires in \(minutes) minute\(minutes == 1 ? "" : "s") and works once.
            If you did not ask for it, ignore this message: nobody can sign in without the code.

            """)
    }
}
