import LambdaAuth
import Synchronization

/// Reproducible randomness for in-process flow tests: the same seed gives the same user ids,
/// session ids and refresh tokens (SplitMix64; not for anything but tests).
public final class SeededRandomSource: RandomSource, Sendable {
    private let generator: Mutex<UInt64>

    public init(seed: UInt64) { generator = Mutex(seed) }

    public func bytes(_ count: Int) -> [UInt8] {
        generator.withLock { state in
            var output: [UInt8] = []
            output.reserveCapacity(count + 8)
            while output.count < count {
                state &+= 0x9E37_79B9_7F4A_7C15
                var mixed = state
                mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
                mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
                mixed ^= mixed >> 31
                withUnsafeBytes(of: mixed.littleEndian) { output += $0 }
            }
            return Array(output.prefix(count))
        }
    }
}
