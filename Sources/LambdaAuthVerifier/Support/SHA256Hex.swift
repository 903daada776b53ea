import Crypto

extension SHA256 {
    /// The SHA-256 of `bytes` in lowercase hexadecimal: the one spelling of a hash in table keys
    /// and items, cache file names and SigV4's string to sign (stored values depend on it).
    public static func hexDigest(of bytes: [UInt8]) -> String {
        hash(data: bytes).bytes.hexString
    }
}

// `Array(digest)` goes through the digest's Sequence conformance, whose iterator type the Swift
// runtime instantiates at first use by scanning every conformance record of the binary (about
// 0.05 ms in each process); copying the contiguous bytes does not.
extension Digest {
    /// The digest's bytes.
    package var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}

extension MessageAuthenticationCode {
    /// The code's bytes.
    package var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}
