/// Where secrets come from. Injected so tests can make ids reproducible; production uses the
/// system's secure generator (getrandom(2) on Linux, via SystemRandomNumberGenerator).
public protocol RandomSource: Sendable {
    func bytes(_ count: Int) -> [UInt8]
}

public struct SystemRandomSource: RandomSource {
    public init() {}
    public func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var output = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            var word = generator.next()
            for _ in 0..<8 where index < count {
                output[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
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
