import Crypto

extension SHA256 {
    /// The SHA-256 of `bytes` in lowercase hexadecimal: the one spelling of a hash in table keys
    /// and items, cache file names and SigV4's string to sign (stored values depend on it).
    public static func hexDigest(of bytes: [UInt8]) -> String {
        hash(data: bytes).bytes.hexString
    }
}

extension Array where Element == UInt8 {
    /// Lowercase hexadecimal.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(count * 2)
        for byte in self {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}
