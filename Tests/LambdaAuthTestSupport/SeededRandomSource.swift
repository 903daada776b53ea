import LambdaAuth
import Synchronization

/// Reproducible randomness for in-process flow tests: the same seed gives the same user ids,
/// session ids and refresh tokens (SplitMix64; not for anything but tests).
public final class SeededRandomSource: RandomSource, Sendable {
    private let generator: Mutex<SplitMix64>

    public init(seed: UInt64) { generator = Mutex(SplitMix64(seed: seed)) }

    public func bytes(_ count: Int) -> [UInt8] {
        generator.withLock { generator in
            var output: [UInt8] = []
            output.reserveCapacity(count + 8)
            while output.count < count {
                withUnsafeBytes(of: generator.next().littleEndian) { output += $0 }
            }
            return Array(output.prefix(count))
        }
    }
}
