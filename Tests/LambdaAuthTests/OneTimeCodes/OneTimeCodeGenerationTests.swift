@testable import LambdaAuth
import Crypto
import Synchronization
import Testing

/// The code itself: six digits without modulo bias, and its keyed hash.
@Suite struct OneTimeCodeGenerationTests {
    /// Hands out the given 32-bit words, in order.
    final class Words: RandomSource, Sendable {
        let words: Mutex<[UInt32]>
        init(_ words: [UInt32]) { self.words = Mutex(words) }
        func bytes(_ count: Int) -> [UInt8] {
            precondition(count == 4)
            let word = words.withLock { $0.removeFirst() }
            return [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
        }
    }

    @Test func drawsInTheIncompleteLastRunAreRedrawn() {
        // 2^32 = 4294 × 10^6 + 967296: the words from 4,294,000,000 up would favour codes below 967296.
        #expect(OneTimeCode.generate(Words([4_294_000_000, 4_294_967_295, 4_293_999_999])) == "999999")
        #expect(OneTimeCode.generate(Words([7])) == "000007")
        #expect(OneTimeCode.generate(Words([1_000_042])) == "000042")
    }

    @Test func codesAreSixDigitsSpreadOverTheRange() {
        var firstDigits = [Int](repeating: 0, count: 10)
        for _ in 0..<5000 {
            let code = OneTimeCode.generate(SystemRandomSource())
            #expect(code.utf8.count == 6 && code.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 })
            firstDigits[Int(code.utf8.first! - 0x30)] += 1
        }
        // 500 expected each; 350 is more than 6 standard deviations away.
        #expect(firstDigits.allSatisfy { $0 > 350 && $0 < 650 }, "\(firstDigits)")
    }

    @Test func theHashIsKeyedAndBoundToTheAddress() throws {
        let key = SymmetricKey(data: [UInt8](repeating: 3, count: 32))
        let ada = try EmailAddress("Ada@Example.com"), bob = try EmailAddress("bob@example.com")
        let hash = OneTimeCode.hash("123456", for: ada, key: key)
        #expect(hash.count == 64)
        #expect(hash == OneTimeCode.hash("123456", for: try EmailAddress("ada@example.com"), key: key))
        #expect(hash != OneTimeCode.hash("123456", for: bob, key: key))
        #expect(hash != OneTimeCode.hash("123456", for: ada, key: SymmetricKey(data: [UInt8](repeating: 4, count: 32))))
        #expect(hash != Array(SHA256.hash(data: Array("123456".utf8))).hexString)
    }
}
