import Crypto

/// RFC 6238 time-based one-time passwords as every authenticator app computes them: HMAC-SHA1
/// (RFC 4226's dynamic truncation), 6 digits, 30-second steps counted from the Unix epoch.
enum TOTP {
    static let digits = 6
    static let period: Int64 = 30
    /// Steps accepted either side of the current one: a phone's clock a little off, a code typed
    /// as it turned over (contract section 21).
    static let drift: Int64 = 1
    /// 160 bits, the length RFC 4226 recommends for an HMAC-SHA1 key.
    static let secretLength = 20

    static func step(at epochSeconds: Int64) -> Int64 {
        epochSeconds >= 0 ? epochSeconds / period : -((-epochSeconds + period - 1) / period)
    }

    /// The code of `step`: RFC 4226 section 5.3 over the step as an 8-byte big-endian counter.
    static func code(secret: [UInt8], step: Int64) -> String {
        let counter = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: step) >> UInt64(56 - 8 * $0)) }
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: counter, using: SymmetricKey(data: secret)).bytes
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary = UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8 | UInt32(mac[offset + 3])
        return OneTimeCode.format(UInt64(binary % 1_000_000))
    }

    /// The step within `drift` of `now` whose code `presented` is, newest first; nil when none.
    /// Every candidate is compared in constant time, and all of them are, so the time taken says
    /// nothing about which one matched.
    static func matchingStep(_ presented: String, secret: [UInt8], now: Int64) -> Int64? {
        let current = step(at: now)
        var matched: Int64?
        for candidate in stride(from: current + drift, through: current - drift, by: -1) {
            if constantTimeEqual(Array(code(secret: secret, step: candidate).utf8), Array(presented.utf8)), matched == nil {
                matched = candidate
            }
        }
        return matched
    }

    /// Six ASCII digits, or INVALID_REQUEST: a malformed code is not an attempt at the real one.
    static func validate(_ code: String) throws(AuthError) {
        guard code.utf8.count == digits, code.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw AuthError(.invalidRequest, "code must be \(digits) digits")
        }
    }
}

/// What an authenticator app shows, for the tools that play the user (`authctl replay`'s
/// `{{totpCode SECRET}}`, the bench): the codes themselves are checked only inside `MFAFlow`.
public enum AuthenticatorApp {
    /// The six digits of a base32 secret at `time`; nil when the secret is not base32.
    public static func code(base32Secret: String, at time: Int64) -> String? {
        guard let secret = Base32.decoded(base32Secret), !secret.isEmpty else { return nil }
        return TOTP.code(secret: secret, step: TOTP.step(at: time))
    }
}
