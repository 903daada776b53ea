/// The form of an address that email claims (`EMAIL#`), one-time codes and their limits are keyed
/// by. Only ASCII letters are lowercased: full Unicode case mapping folds other characters into
/// ASCII ones (the Kelvin sign U+212A into `k`, U+0131 dotless i into `i`, long s U+017F into
/// `s`…), so `\u{212A}evin@example.com` would claim or join `kevin@example.com`'s account.
/// An address with any non-ASCII byte has no key at all: it is never linked by email and gets no
/// code, because no mail system agrees on what such an address is equal to.
enum EmailKey {
    static func of(_ address: String) -> String? {
        guard address.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        return String(decoding: address.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// The address without its `+tag` (`victim+1@x` → `victim@x`): most providers deliver every
    /// tag to one mailbox, so a limit per address counts them together. `key` is from `of`.
    static func withoutTag(_ key: String) -> String {
        guard let at = key.utf8.lastIndex(of: UInt8(ascii: "@")),
              let plus = key.utf8[..<at].firstIndex(of: UInt8(ascii: "+")) else { return key }
        return String(key[..<plus]) + String(key[at...])
    }
}
