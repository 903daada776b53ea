import CGlibcCompat
#if canImport(Glibc)
import Glibc
#endif

/// Where secrets come from. Injected so tests can make ids reproducible; production uses the
/// system's secure generator (getrandom(2) on Linux).
public protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

public struct SystemRandomSource: RandomSource {
    public init() {}

    /// One getrandom(2) call per request: SystemRandomNumberGenerator made one per eight bytes (a
    /// sign-in's dozen small secrets cost 16 calls). No pool of bytes drawn ahead is kept: two
    /// processes restored from one snapshot, or a fork, would hand out the same ones.
    public func bytes(_ count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            // getrandom blocks only before the kernel's generator is seeded, at boot; a signal may
            // cut a call short.
            let got = output.withUnsafeMutableBytes { buffer in
                lambda_auth_getrandom(buffer.baseAddress! + filled, UInt(count - filled))
            }
            if got > 0 { filled += Int(got) } else if errno != EINTR { fatalError("getrandom failed: errno \(errno)") }
        }
        return output
    }
}

extension RandomSource {
    /// A URL-safe random identifier with `bits` of entropy.
    public func identifier(bits: Int = 128) -> String {
        Base64.urlEncoded(bytes((bits + 7) / 8))
    }
}

/// Random identifiers for users, sessions and token items: 128 bits, lowercase base32.
func newIdentifier(_ random: any RandomSource) -> String {
    Base32.encode(random.bytes(16)).lowercased()
}
