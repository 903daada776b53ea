@testable import LambdaAuth
import Testing

/// RFC 8949 Appendix A's examples (the decodable subset, and those the decoder refuses by design),
/// and the strictness WebAuthn inputs need: every malformed input is a CBORError, never a crash.
@Suite struct CBORDecoderTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var output: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            output.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return output
    }

    static func decode(_ hex: String) throws(CBORError) -> CBORValue { try CBORDecoder().decode(bytes(hex)) }

    static func refusal(_ hex: String) -> CBORError? {
        do { _ = try decode(hex); return nil } catch { return error }
    }

    static func map(_ pairs: [(CBORValue, CBORValue)]) -> CBORValue {
        .map(pairs.map { CBORMapEntry(key: $0.0, value: $0.1) })
    }

    // RFC 8949 Appendix A, Table 6: the integers, simple values, strings, arrays and maps.
    static let appendixA: [(String, CBORValue)] = [
        ("00", .unsigned(0)), ("01", .unsigned(1)), ("0a", .unsigned(10)), ("17", .unsigned(23)),
        ("1818", .unsigned(24)), ("1819", .unsigned(25)), ("1864", .unsigned(100)), ("1903e8", .unsigned(1000)),
        ("1a000f4240", .unsigned(1_000_000)), ("1b000000e8d4a51000", .unsigned(1_000_000_000_000)),
        ("1bffffffffffffffff", .unsigned(UInt64.max)),
        ("3bffffffffffffffff", .negative(UInt64.max)),  // −18446744073709551616
        ("20", .negative(0)), ("29", .negative(9)), ("3863", .negative(99)), ("3903e7", .negative(999)),
        ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null),
        ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])),
        ("60", .text("")), ("6161", .text("a")), ("6449455446", .text("IETF")), ("62225c", .text("\"\\")),
        ("62c3bc", .text("\u{00FC}")), ("63e6b0b4", .text("\u{6C34}")), ("64f0908591", .text("\u{10151}")),
        ("80", .array([])), ("83010203", .array([.unsigned(1), .unsigned(2), .unsigned(3)])),
        ("8301820203820405", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
        ("98190102030405060708090a0b0c0d0e0f101112131415161718181819", .array((1...25).map { .unsigned(UInt64($0)) })),
        ("a0", .map([])),
        ("a201020304", map([(.unsigned(1), .unsigned(2)), (.unsigned(3), .unsigned(4))])),
        ("a26161016162820203", map([(.text("a"), .unsigned(1)), (.text("b"), .array([.unsigned(2), .unsigned(3)]))])),
        ("826161a161626163", .array([.text("a"), map([(.text("b"), .text("c"))])])),
        ("a56161614161626142616361436164614461656145",
         map([(.text("a"), .text("A")), (.text("b"), .text("B")), (.text("c"), .text("C")), (.text("d"), .text("D")), (.text("e"), .text("E"))])),
    ]

    @Test func appendixAExamplesDecode() throws {
        for (hex, expected) in Self.appendixA {
            #expect(try Self.decode(hex) == expected, "\(hex)")
        }
        #expect(try Self.decode("3903e7").integerValue == -1000)
        #expect(try Self.decode("3bffffffffffffffff").integerValue == nil)  // beyond Int64: no silent wrap
        #expect(try Self.decode("1bffffffffffffffff").integerValue == nil)
    }

    /// The rest of Appendix A: floats, tags (dates, bignums, encoded CBOR, URIs), undefined, other
    /// simple values and every indefinite-length form. WebAuthn needs none of them; each is refused
    /// with its reason.
    @Test func appendixAExamplesRefusedByDesign() {
        let floats = ["f90000", "f98000", "f93c00", "fb3ff199999999999a", "f93e00", "f97bff", "fa47c35000", "fa7f7fffff",
                      "fb7e37e43c8800759c", "f90001", "f90400", "fbc010666666666666", "f9c400", "fbc010666666666666",
                      "f97c00", "f97e00", "f9fc00", "fa7f800000", "fa7fc00000", "faff800000", "fb7ff0000000000000",
                      "fb7ff8000000000000", "fbfff0000000000000"]
        for hex in floats { #expect(Self.refusal(hex)?.reason == "floating-point values are not accepted", "\(hex)") }
        let tagged = ["c249010000000000000000", "c349010000000000000000", "c074323031332d30332d32315432303a30343a30305a",
                      "c11a514b67b0", "c1fb41d452d9ec200000", "d74401020304", "d818456449455446",
                      "d82076687474703a2f2f7777772e6578616d706c652e636f6d"]
        for hex in tagged { #expect(Self.refusal(hex)?.reason == "tags are not accepted", "\(hex)") }
        #expect(Self.refusal("f7")?.reason == "simple value 23 is not accepted")   // undefined
        #expect(Self.refusal("f0")?.reason == "simple value 16 is not accepted")
        #expect(Self.refusal("f8ff")?.reason == "simple value (one-byte) is not accepted")
        let indefinite = ["5f42010243030405ff", "7f657374726561646d696e67ff", "9fff", "9f018202039f0405ffff",
                          "9f01820203820405ff", "83018202039f0405ff", "83019f0203ff820405",
                          "9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff",
                          "bf61610161629f0203ffff", "826161bf61626163ff", "bf6346756ef563416d7421ff"]
        for hex in indefinite { #expect(Self.refusal(hex)?.reason == "indefinite length is not accepted", "\(hex)") }
    }

    @Test func trailingBytesAreRefusedButAPrefixReportsItsLength() throws {
        #expect(Self.refusal("0000") == CBORError(reason: "trailing bytes after the item", offset: 1))
        let (value, length) = try CBORDecoder().decodePrefix(Self.bytes("a1010200ff"))
        #expect(value == Self.map([(.unsigned(1), .unsigned(2))]))
        #expect(length == 3)
    }

    @Test func duplicateMapKeysAreRefusedWhateverTheirValues() {
        #expect(Self.refusal("a201020103") == CBORError(reason: "duplicate map key", offset: 3))
        #expect(Self.refusal("a2616101616102")?.reason == "duplicate map key")
        // Equal keys encoded differently (1 and 1 with a one-byte argument) are the same key.
        #expect(Self.refusal("a20102180103")?.reason == "duplicate map key")
        // 1 and −2 are different keys, as are the text "a" and the bytes h'61'.
        #expect(Self.refusal("a201022102") == nil)
        #expect(Self.refusal("a2616101416102") == nil)
    }

    /// A map of `keys`, each an unsigned integer with a two-byte argument, each value null; and
    /// how many key comparisons reading it took.
    static func readMap(_ keys: [UInt16]) throws(CBORError) -> (value: CBORValue, comparisons: Int) {
        var bytes: [UInt8] = [0xB9, UInt8(keys.count >> 8), UInt8(keys.count & 0xFF)]
        for key in keys { bytes += [0x19, UInt8(key >> 8), UInt8(key & 0xFF), 0xF6] }
        var reader = CBORDecoder.Reader(bytes: bytes, maximumDepth: 16, maximumItems: 1 << 20)
        let value = try reader.item(depth: 0)
        return (value, reader.keyComparisons)
    }

    /// The duplicate-key check compared each key with every earlier one: 199,990,000 comparisons
    /// for 20,000 keys. Keys chained by hash meet another only when they collide (or repeat).
    @Test func aLargeMapTakesComparisonsOnlyForRepeatedKeys() throws {
        let keys = (0..<20_000).map { UInt16($0) }
        let (map, comparisons) = try Self.readMap(keys)
        #expect(map.mapEntries?.count == 20_000)
        #expect(map[19_999] == .null && map[20_000] == nil)
        #expect(comparisons < 20, "\(comparisons) comparisons for 20,000 distinct keys")
        // The same map with its last key repeating the first: refused where the repeat begins,
        // after about one comparison, not 20,000.
        var repeated = keys
        repeated[19_999] = 0
        do {
            _ = try Self.readMap(repeated)
            Issue.record("a repeated key was accepted")
        } catch {
            #expect(error == CBORError(reason: "duplicate map key", offset: 3 + 19_999 * 4))
        }
    }

    /// Keys of every kind that compare equal hash alike, so the hashed check refuses what the
    /// scan did: composite keys, and integers encoded at different lengths.
    @Test func equalKeysOfEveryKindAreDuplicates() {
        // {[1, "a"]: 0, [1, "a"]: 1}; {{1: h'00'}: 0, {1: h'00'}: 1}; {-1: 0, -1 with a two-byte argument: 1}
        #expect(Self.refusal("a282016161008201616101")?.reason == "duplicate map key")
        #expect(Self.refusal("a2a101410000a101410001")?.reason == "duplicate map key")
        #expect(Self.refusal("a2200039000001")?.reason == "duplicate map key")
        #expect(Self.refusal("a282016161008201616201") == nil)
        #expect(Self.refusal("a2f400f501") == nil)
        #expect(Self.refusal("a2f400f401")?.reason == "duplicate map key")
        #expect(Self.refusal("a2f600f601")?.reason == "duplicate map key")
        #expect(Self.refusal("a2410000410001")?.reason == "duplicate map key")
    }

    @Test func truncatedInputIsAnErrorAtEveryLength() {
        let whole = Self.bytes("a56161614161626142616361436164614461656145")
        for length in 0..<whole.count {
            #expect(throws: CBORError.self) { try CBORDecoder().decode(Array(whole[..<length])) }
        }
        #expect(Self.refusal("5bffffffffffffffff")?.reason.hasPrefix("length 18446744073709551615 runs past") == true)
        #expect(Self.refusal("9bffffffffffffffff")?.reason.hasPrefix("count 18446744073709551615 runs past") == true)
        #expect(Self.refusal("bb7fffffffffffffff")?.reason.hasPrefix("count") == true)
        #expect(Self.refusal("1c")?.reason == "reserved additional information 28")
        #expect(Self.refusal("ff")?.reason == "break outside an indefinite-length item")
    }

    @Test func invalidUTF8TextIsRefused() {
        #expect(Self.refusal("62c328")?.reason == "text string is not UTF-8")
        #expect(Self.refusal("63eda080")?.reason == "text string is not UTF-8")  // a UTF-16 surrogate
        #expect(Self.refusal("62c328") == CBORError(reason: "text string is not UTF-8", offset: 0))
    }

    @Test func depthAndItemLimitsHold() throws {
        // 16 nested arrays around an integer: depth 16 is the item at the bottom.
        let nested16 = String(repeating: "81", count: 16) + "00"
        #expect(throws: Never.self) { try Self.decode(nested16) }
        #expect(Self.refusal("81" + nested16)?.reason == "nesting deeper than 16")
        // Far deeper input fails on the limit, not on the stack.
        #expect(Self.refusal(String(repeating: "81", count: 100_000) + "00")?.reason == "nesting deeper than 16")
        let tenItems = "89" + String(repeating: "00", count: 9)
        #expect(throws: Never.self) { try CBORDecoder(maximumItems: 10).decode(Self.bytes(tenItems)) }
        #expect(throws: CBORError.self) { try CBORDecoder(maximumItems: 9).decode(Self.bytes(tenItems)) }
    }

    @Test func coseLabelsAreReadBySignedInteger() throws {
        // An ES256 COSE key's shape: {1: 2, 3: -7, -1: 1, -2: h'..', -3: h'..'}.
        let key = try Self.decode("a5010203262001215820" + String(repeating: "11", count: 32) + "225820" + String(repeating: "22", count: 32))
        #expect(key[1]?.integerValue == 2)
        #expect(key[3]?.integerValue == -7)
        #expect(key[-1]?.integerValue == 1)
        #expect(key[-2]?.bytesValue == Array(repeating: 0x11, count: 32))
        #expect(key[-3]?.bytesValue == Array(repeating: 0x22, count: 32))
        #expect(key[-4] == nil)
    }

    @Test func randomInputNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        var decoded = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let input = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if (try? CBORDecoder().decode(input)) != nil { decoded += 1 }
        }
        // Some short random inputs are valid items (a lone small integer is): both outcomes occur.
        #expect(decoded > 0)
    }
}
