/// Base64 and base64url (RFC 4648) without Foundation.
///
/// Decoding is strict and canonical on purpose: a JWS whose parts decode under several spellings
/// (padding, stray bits in the last character) would let one signed token have many textual forms.
public enum Base64 {
    static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static let standardTable: [UInt8] = decodingTable(standardAlphabet)
    static let urlTable: [UInt8] = decodingTable(urlAlphabet)

    static func decodingTable(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(value) }
        return table
    }

    /// base64url without padding (JOSE, refresh tokens).
    public static func urlEncoded<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        encode(Array(bytes), alphabet: urlAlphabet, pad: false)
    }

    /// Standard base64 with padding (API Gateway bodies, PEM).
    public static func encoded<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        encode(Array(bytes), alphabet: standardAlphabet, pad: true)
    }

    static func encode(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            output.append(alphabet[Int(chunk >> 6 & 63)])
            output.append(alphabet[Int(chunk & 63)])
            index += 3
        }
        let remaining = bytes.count - index
        if remaining == 1 {
            let chunk = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            if pad { output.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")]) }
        } else if remaining == 2 {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(chunk >> 18 & 63)])
            output.append(alphabet[Int(chunk >> 12 & 63)])
            output.append(alphabet[Int(chunk >> 6 & 63)])
            if pad { output.append(UInt8(ascii: "=")) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Strict, canonical base64url without padding; nil for anything else.
    public static func urlDecoded<Text: StringProtocol>(_ text: Text) -> [UInt8]? {
        decode(Array(text.utf8), table: urlTable, padded: false)
    }

    /// Standard base64; padding required when the length needs it. Whitespace is not accepted.
    public static func decoded<Text: StringProtocol>(_ text: Text) -> [UInt8]? {
        decode(Array(text.utf8), table: standardTable, padded: true)
    }

    static func decode(_ input: [UInt8], table: [UInt8], padded: Bool) -> [UInt8]? {
        var count = input.count
        if padded {
            guard count % 4 == 0 else { return nil }
            if count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
            if count > 0, input[count - 1] == UInt8(ascii: "=") { count -= 1 }
        }
        let tail = count % 4
        if tail == 1 { return nil }
        let outputCount = count / 4 * 3 + (tail == 0 ? 0 : tail - 1)
        // Every ID token verification decodes three parts, so this works on whole 4-symbol blocks
        // through raw buffers. Alphabet values are below 64; the table marks other bytes 0xFF, so
        // OR-ing every looked-up value and testing the top bits finds any invalid symbol at the end.
        var invalid: UInt8 = 0
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
            table.withUnsafeBufferPointer { table in
                input.withUnsafeBufferPointer { symbols in
                    var inputIndex = 0
                    var outputIndex = 0
                    while inputIndex + 4 <= count {
                        let a = table[Int(symbols[inputIndex])], b = table[Int(symbols[inputIndex + 1])]
                        let c = table[Int(symbols[inputIndex + 2])], d = table[Int(symbols[inputIndex + 3])]
                        invalid |= a | b | c | d
                        let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                        buffer[outputIndex] = UInt8(truncatingIfNeeded: chunk >> 16)
                        buffer[outputIndex + 1] = UInt8(truncatingIfNeeded: chunk >> 8)
                        buffer[outputIndex + 2] = UInt8(truncatingIfNeeded: chunk)
                        inputIndex += 4
                        outputIndex += 3
                    }
                    // Canonical form: the bits left over in the final symbol must be zero.
                    if tail >= 2 {
                        let a = table[Int(symbols[inputIndex])], b = table[Int(symbols[inputIndex + 1])]
                        invalid |= a | b
                        buffer[outputIndex] = a << 2 | b >> 4
                        if tail == 3 {
                            let c = table[Int(symbols[inputIndex + 2])]
                            invalid |= c
                            buffer[outputIndex + 1] = b << 4 | c >> 2
                            if c & 0b11 != 0 { invalid |= 0xFF }
                        } else if b & 0b1111 != 0 {
                            invalid |= 0xFF
                        }
                    }
                }
            }
            initialized = outputCount
        }
        return invalid & 0xC0 == 0 ? output : nil
    }
}
