import Crypto

extension SHA256 {
    /// The SHA-256 of `bytes` in lowercase hexadecimal: the one spelling of a hash in table keys
    /// and items, cache file names and SigV4's string to sign (stored values depend on it).
    public static func hexDigest(of bytes: [UInt8]) -> String {
        Array(hash(data: bytes)).hexString
    }
}
