import Crypto

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
