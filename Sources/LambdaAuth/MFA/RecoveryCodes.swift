import Crypto

/// The ten codes a user keeps on paper for the day the phone is lost (contract section 21):
/// 10 characters of `a-z2-7` each (50 bits), shown once, kept only as keyed hashes, each usable
/// once.
enum RecoveryCodes {
    static let count = 10
    static let length = 10
    /// 32 symbols: five bits of a random byte pick one, uniformly.
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    static func generate(_ random: any RandomSource) -> [String] {
        (0..<count).map { _ in String(decoding: random.bytes(length).map { alphabet[Int($0 & 0x1F)] }, as: UTF8.self) }
    }

    /// What the user typed, as it was shown: lowercased, without the spaces and dashes a person
    /// adds when copying it; nil when it cannot be a recovery code at all.
    static func normalized(_ presented: String) -> String? {
        let kept = presented.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "-") }
            .map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }
        guard kept.count == length, kept.allSatisfy(alphabet.contains) else { return nil }
        return String(decoding: kept, as: UTF8.self)
    }

    /// HMAC-SHA256 under a key derived from the factor's TOTP secret, which is sealed under
    /// AUTH_DATA_KEYS: a stolen table gives no way to test guesses offline, and a re-sealed
    /// secret keeps every hash valid (the secret itself does not change).
    static func hash(_ code: String, secret: [UInt8]) -> String {
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secret), info: Array("lambda-auth-recovery-v1".utf8),
                                         outputByteCount: 32)
        return HMAC<SHA256>.authenticationCode(for: Array(code.utf8), using: key).bytes.hexString
    }
}
