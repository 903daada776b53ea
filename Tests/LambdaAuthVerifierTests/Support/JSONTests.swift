import LambdaAuth
import Testing

@Suite struct JSONTests {
    @Test func parsesAndSerialisesDeterministically() throws {
        let value = try JSONValue.parse(#"{"b": [1, 2.5, -3e2], "a": "x\u00e9\n", "c": {"d": null, "e": true}}"#)
        #expect(value.serialized() == #"{"a":"xé\n","b":[1,2.5,-3e2],"c":{"d":null,"e":true}}"#)
    }

    @Test func refusesDuplicateMembers() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(#"{"a": 1, "a": 2}"#) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(#"{"x": {"a": 1, "a": 1}}"#) }
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\":}", "01", "1.", "\"\\x\"", "\"\u{01}\"", "tru", "{} x", "\"\\ud800\""])
    func refusesInvalidJSON(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test func decodesSurrogatePairs() throws {
        #expect(try JSONValue.parse(#""\ud83d\ude00""#) == .string("😀"))
    }

    /// Strings are written by runs; each escape, at the start, middle and end of a run and next
    /// to multi-byte UTF-8, must come out as the one-byte-at-a-time rule says, and parse back.
    @Test func escapesEveryByteThatNeedsIt() throws {
        func reference(_ text: String) -> String {
            var output = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": output += "\\\""
                case "\\": output += "\\\\"
                case "\n": output += "\\n"
                case "\r": output += "\\r"
                case "\t": output += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: output.unicodeScalars.append(scalar)
                }
            }
            return output + "\""
        }
        let specials = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) } + ["\"", "\\"]
        var texts = ["", "plain", "é😀", #"{"a":"b\"c"}"#]
        for special in specials {
            texts += [special, special + special, "x" + special, special + "x", "é" + special + "😀", "ab" + special + "cd" + special]
        }
        for text in texts {
            let written = JSONValue.string(text).serialized()
            #expect(written == reference(text))
            #expect(try JSONValue.parse(written) == .string(text))
        }
    }

    @Test func limitsNesting() {
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(deep) }
    }
}

@Suite struct Base64Tests {
    @Test func roundTripsEveryLength() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base64.urlDecoded(Base64.urlEncoded(bytes)) == bytes)
            #expect(Base64.decoded(Base64.encoded(bytes)) == bytes)
        }
    }

    @Test func refusesNonCanonicalBase64URL() {
        #expect(Base64.urlDecoded("QQ") == [0x41])
        #expect(Base64.urlDecoded("QR") == nil)   // stray low bits
        #expect(Base64.urlDecoded("QQ==") == nil) // padding
        #expect(Base64.urlDecoded("Q+") == nil)   // standard alphabet
        #expect(Base64.urlDecoded("Q") == nil)
    }
}

@Suite struct ISO8601Tests {
    @Test func formatsAndParses() {
        #expect(ISO8601.format(epochSeconds: 0) == "1970-01-01T00:00:00Z")
        #expect(ISO8601.format(epochSeconds: 1_767_225_600) == "2026-01-01T00:00:00Z")
        #expect(ISO8601.format(epochSeconds: 951_782_400) == "2000-02-29T00:00:00Z")
        #expect(ISO8601.parse("2026-01-01T00:00:00Z") == 1_767_225_600)
        #expect(ISO8601.parse("2026-01-01T01:00:00+01:00") == 1_767_225_600)
        #expect(ISO8601.parse("2026-01-01T00:00:00.500Z") == 1_767_225_600.5)
        #expect(ISO8601.parse("2026-13-01T00:00:00Z") == nil)
        #expect(ISO8601.parse("yesterday") == nil)
    }
}
