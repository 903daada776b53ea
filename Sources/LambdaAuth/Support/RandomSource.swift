import CGlibcCompat
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where secrets come from. Injected so tests can make ids reproducible; production uses the
/// system's secure generator (getrandom(2) on Linux).
public protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

public struct SystemRandomSource: RandomSource {
    public init() {}

    /// Served from a pool that one getrandom(2) call fills: a sign-in asks for a dozen small
    /// secrets, and SystemRandomNumberGenerator made one system call per eight bytes. Bytes
    /// handed out are wiped from the pool.
    public func bytes(_ count: Int) -> [UInt8] {
        guard count <= SystemRandomSource.poolSize / 2 else { return SystemRandomSource.kernelBytes(count) }
        return SystemRandomSource.pool.withLock { pool in
            if pool.available.count < count { pool.available = SystemRandomSource.kernelBytes(SystemRandomSource.poolSize) }
            let taken = Array(pool.available.suffix(count))
            for index in (pool.available.count - count)..<pool.available.count { pool.available[index] = 0 }
            pool.available.removeLast(count)
            return taken
        }
    }

    static let poolSize = 512
    private static let pool = Mutex(Pool())
    private struct Pool { var available: [UInt8] = [] }

    /// `count` bytes straight from the kernel's generator (getrandom blocks only before it is
    /// seeded, at boot; a signal may cut a call short).
    static func kernelBytes(_ count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
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
