import LambdaAuth
import Testing

/// The block-wise base64 decoder and the ASCII fast path of the JSON string parser (both tuned for
/// ID token verification) must refuse exactly what the straightforward versions refused.
@Suite struct DecodingFastPathTests {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    @Test func anInvalidSymbolAnywhereIsRefused() {
        let valid = Base64.urlEncoded(Array(0..<20 as Range<UInt8>))  // 27 symbols: 6 blocks and a tail of 3
        #expect(Base64.urlDecoded(valid) == Array(0..<20))
        let symbols = Array(valid.utf8)
        for position in symbols.indices {
            for bad in Array("+/=. \n\u{0}".utf8) + [0x80, 0xFF] {
                var corrupted = symbols
                corrupted[position] = bad
                #expect(Base64.urlDecoded(String(decoding: corrupted, as: UTF8.self)) == nil, "byte \(bad) at \(position)")
            }
        }
    }

    @Test func strayBitsInEitherTailAreRefused() {
        // Two symbols carry 1 byte (4 spare bits), three carry 2 bytes (2 spare bits).
        #expect(Base64.urlDecoded("QUI") == [0x41, 0x42])
        for last in ["J", "K", "L"] { #expect(Base64.urlDecoded("QU" + last) == nil) }
        for last in ["R", "S", "T", "U", "V", "W", "X", "Y", "Z", "a", "b", "c", "d", "e", "f"] {
            #expect(Base64.urlDecoded("Q" + last) == nil)
        }
        // Every canonical two- and three-symbol tail decodes and re-encodes to itself.
        for first in Self.alphabet {
            for second in Self.alphabet {
                let text = String(decoding: [first, second], as: UTF8.self)
                if let bytes = Base64.urlDecoded(text) { #expect(Base64.urlEncoded(bytes) == text) }
            }
        }
    }

    @Test func paddedStandardBase64KeepsItsRules() {
        #expect(Base64.decoded("QUI=") == [0x41, 0x42])
        #expect(Base64.decoded("QQ==") == [0x41])
        #expect(Base64.decoded("QUI") == nil)
        #expect(Base64.decoded("====") == nil)
        #expect(Base64.decoded("Q===") == nil)
        #expect(Base64.decoded("Q=I=") == nil)
        #expect(Base64.decoded("+/+/") == [0xFB, 0xFF, 0xBF])
    }

    @Test func jsonStringsOutsideASCIIAreStillValidated() throws {
        #expect(try JSONValue.parse(Array("{\"name\":\"Zoë\"}".utf8))["name"] == "Zoë")
        for invalid: [UInt8] in [[0xC3], [0xFF], [0xED, 0xA0, 0x80], [0xC0, 0xAF]] {
            let document = Array("{\"name\":\"".utf8) + invalid + Array("\"}".utf8)
            #expect(throws: JSONParseError.self) { try JSONValue.parse(document) }
        }
    }

    @Test func largeAndNestedObjectsParseTheSame() throws {
        var members: [String: JSONValue] = [:]
        for index in 0..<40 { members["member\(index)"] = ["nested": .number(index)] }
        let document = JSONValue.object(members)
        #expect(try JSONValue.parse(document.serializedBytes()) == document)
    }
}
