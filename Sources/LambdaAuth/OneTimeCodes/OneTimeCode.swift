import Crypto

/// An address as the code flows key it: at most 254 bytes, ASCII only (see `EmailKey`), exactly
/// one `@` with something on both sides, no space or control character; its ASCII letters
/// lowercased, because mail providers treat addresses case-insensitively and one person must not
/// get two identities (or two code budgets).
public struct EmailAddress: Sendable, Hashable, CustomStringConvertible {
    public let normalized: String

    public init(_ raw: String) throws(AuthError) {
        let bytes = Array(raw.utf8)
        let atCount = bytes.count { $0 == UInt8(ascii: "@") }
        guard bytes.count <= 254, atCount == 1, bytes.first != UInt8(ascii: "@"), bytes.last != UInt8(ascii: "@"),
              !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }), let key = EmailKey.of(raw) else {
            throw AuthError(.invalidRequest, "email must be an ASCII address of at most 254 bytes with one @ and no spaces or control characters")
        }
        normalized = key
    }

    /// What the per-address limit counts: the address without its `+tag`.
    var rateLimitKey: String { EmailKey.withoutTag(normalized) }

    public var description: String { normalized }
}

/// The six digits a user types, and what the table keeps of them.
enum OneTimeCode {
    static let digits = 6
    static let space: UInt64 = 1_000_000

    /// Uniform over 000000...999999: 32 random bits are redrawn while they fall in the last,
    /// incomplete run of a million (probability 2⁻¹⁴ or so), so no code is likelier than another.
    static func generate(_ random: any RandomSource) -> String {
        let bound = (UInt64(1) << 32) - ((UInt64(1) << 32) % space)
        for _ in 0..<1000 {
            let value = random.bytes(4).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if value < bound { return format(value % space) }
        }
        // A source that never lands below `bound` in 1000 draws is not random; do not mint a code from it.
        preconditionFailure("the random source gave 1000 out-of-range draws")
    }

    static func format(_ value: UInt64) -> String {
        let text = String(value)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// Six ASCII digits, or INVALID_REQUEST (a malformed code is not an attempt at the real one).
    static func validate(_ code: String) throws(AuthError) {
        guard code.utf8.count == digits, code.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw AuthError(.invalidRequest, "code must be \(digits) digits")
        }
    }

    /// HMAC-SHA256 under AUTH_OTP_KEY of the address and the code: a stolen table gives neither
    /// the codes nor a way to test guesses offline, and a code is bound to the address it was sent to.
    static func hash(_ code: String, for email: EmailAddress, key: SymmetricKey) -> String {
        let message = Array("lambda-auth-otp-v1\u{0}\(email.normalized)\u{0}\(code)".utf8)
        return HMAC<SHA256>.authenticationCode(for: message, using: key).bytes.hexString
    }
}
