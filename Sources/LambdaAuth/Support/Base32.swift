/// RFC 4648 base32 (A–Z, 2–7), unpadded: the alphabet of AWS access key ids.
enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                output.append(alphabet[Int(buffer >> UInt32(bits) & 31)])
            }
        }
        if bits > 0 { output.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }
}
