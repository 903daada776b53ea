@testable import LambdaAuth
import Testing

/// The system source asks getrandom(2) once per request: every request gets as many bytes as it
/// asked for, and no two requests share bytes.
@Suite struct SystemRandomSourceTests {
    @Test func everyRequestGetsFreshBytesOfItsOwn() {
        let source = SystemRandomSource()
        var seen: Set<[UInt8]> = []
        for count in [1, 8, 16, 31, 32, 64, 255, 256, 257, 1000] {
            for _ in 0..<40 {
                let bytes = source.bytes(count)
                #expect(bytes.count == count)
                if count >= 16 { #expect(seen.insert(bytes).inserted, "\(count) bytes repeated") }
            }
        }
        #expect(source.bytes(0).isEmpty)
        // Consecutive 16-byte draws never repeat and are not all zero.
        let draws = (0..<200).map { _ in source.bytes(16) }
        #expect(Set(draws).count == draws.count)
        #expect(!draws.contains([UInt8](repeating: 0, count: 16)))
    }
}
