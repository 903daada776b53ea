@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTestSupport
import LambdaAuthVerifier
import Testing

/// The store reads and writes DynamoDB JSON straight from and to bytes; the `JSONValue` route
/// (`JSONValue.parse` then `DynamoJSON.decodeItem`, `DynamoJSON.encode` then `serializedBytes`)
/// is the reference. Both must accept the same texts, give the same items, write the same bytes.
@Suite struct DynamoJSONBytesTests {
    static let texts = ["", "PROFILE", "USER#3felw2nw7ug5khaylb5xurmf7q", "Zoë ✓ 😀", "quote \" backslash \\ slash /",
                        "line\nbreak\ttab\r", "\u{0}\u{1}\u{1F}", #"{"createdAt":"2026-11-23T18:39:48Z","displayName":null}"#]
    static let numbers = ["0", "-0", "1795459286", "-12.5", "1e3", "6.02E+23", "1.5e-7", "123456789012345678901234567890"]

    static func value(_ generator: inout SplitMix64, depth: Int) -> AttributeValue {
        switch Int.random(in: 0..<(depth > 2 ? 6 : 8), using: &generator) {
        case 0, 1: return .s(texts.randomElement(using: &generator)!)
        case 2: return .n(numbers.randomElement(using: &generator)!)
        case 3: return .bool(Bool.random(using: &generator))
        case 4: return .null
        case 5: return Bool.random(using: &generator) ? .ss(Array(texts.shuffled(using: &generator).prefix(3))) : .ns(Array(numbers.prefix(2)))
        case 6: return .m(item(&generator, depth: depth + 1))
        default: return .l((0..<Int.random(in: 0...3, using: &generator)).map { _ in value(&generator, depth: depth + 1) })
        }
    }

    static func item(_ generator: inout SplitMix64, depth: Int = 0) -> Item {
        var item: Item = [:]
        for _ in 0..<Int.random(in: 0...6, using: &generator) {
            item[(texts + ["PK", "SK", "ttl", "a"]).randomElement(using: &generator)!] = value(&generator, depth: depth)
        }
        return item
    }

    /// The reference: what the store read before, through JSONValue.
    static func referenceItems(_ bytes: [UInt8]) -> [Item]? {
        guard let list = (try? JSONValue.parse(bytes))?["Items"]?.arrayValue else { return nil }
        var items: [Item] = []
        for element in list {
            guard let item = try? DynamoJSON.decodeItem(element) else { return nil }
            items.append(item)
        }
        return items
    }

    static func partitionFile(_ items: [Item]) -> [UInt8] {
        JSONValue.object(["Items": .array(items.map(DynamoJSON.encode))]).serializedBytes()
    }

    @Test func writingGivesTheReferenceBytesAndReadingGivesTheItemsBack() throws {
        var generator = SplitMix64(seed: 15)
        for round in 0..<300 {
            let item = Self.item(&generator)
            #expect(DynamoJSON.encodedBytes(item) == DynamoJSON.encode(item).serializedBytes(), "round \(round)")
            let file = Self.partitionFile([item, Self.item(&generator)])
            #expect(try DynamoJSON.partitionItems(file) == Self.referenceItems(file), "round \(round)")
        }
    }

    @Test func theSizeBoundIsNeverBelowTheEncodedSize() {
        var generator = SplitMix64(seed: 400)
        let worst: Item = ["\u{1}": .s(String(repeating: "\u{0}", count: 50)), "ss": .ss(["\"", "\\"]),
                           "l": .l([.null, .bool(false), .m([:]), .l([])])]
        for item in (0..<300).map({ _ in Self.item(&generator) }) + [worst, [:]] {
            #expect(DynamoJSON.encodedSizeBound(item) >= DynamoJSON.encodedBytes(item).count, "\(item)")
        }
    }

    @Test func anExportLineHoldsItsItemAlone() throws {
        var generator = SplitMix64(seed: 3)
        let item = Self.item(&generator)
        let line = JSONValue.object(["Item": DynamoJSON.encode(item)]).serializedBytes()
        #expect(try DynamoJSON.exportLine(line) == item)
        for refused in [#"{"Item":{},"x":1}"#, #"{"x":1}"#, #"{"Item":{"a":{"N":"x"}}}"#, #"{"Item":[]}"#, #"{}"#] {
            #expect(throws: JSONParseError.self, "\(refused)") { try DynamoJSON.exportLine(Array(refused.utf8)) }
        }
    }

    @Test func aLogRecordIsWhatTheJSONValueRecordWasAndReadsBack() throws {
        var generator = SplitMix64(seed: 7)
        let changes: [(TableKey, Item?)] = [(TableKey(pk: "USER#1", sk: "PROFILE"), Self.item(&generator)),
                                            (TableKey(pk: "USER#1", sk: "SESSION#2"), nil),
                                            (TableKey(pk: "USER#1", sk: "REFRESH#3"), Self.item(&generator))]
        let record = WriteAheadLog.encodeRecord(changes, generation: 3)
        let payload = Array(record.dropFirst(WriteAheadLog.recordHeaderSize))
        let reference = JSONValue.object(["changes": .array(changes.map { key, item in
            var entry: [String: JSONValue] = ["key": DynamoJSON.encode(key.item)]
            if let item { entry["item"] = DynamoJSON.encode(item) }
            return .object(entry)
        })]).serializedBytes()
        #expect(payload == reference)
        let read = try DynamoJSON.logChanges(payload)
        #expect(read.map(\.key) == changes.map(\.0.item))
        #expect(read.map(\.item) == changes.map(\.1))
        // The log's reader leaves each after-image unparsed until it is used: the same items.
        let ranges = try DynamoJSON.logChangeRanges(payload)
        #expect(ranges.map(\.key) == changes.map(\.0.item))
        #expect(try ranges.map { change in try change.item.map { try DynamoJSON.item(Array(payload[$0])) } } == changes.map(\.1))
        let logged = ranges.map { LoggedChange(record: payload, range: $0.item, source: "wal") }
        #expect(try logged.map { try $0.item() } == changes.map(\.1))
        #expect(try logged.map { try $0.item() } == changes.map(\.1), "parsed once, then kept")
    }

    /// Every one-byte change of a valid file (deleted, or replaced by a character that matters to
    /// the grammar) is accepted by both routes with the same items, or refused by both.
    @Test func damagedFilesAreRefusedExactlyWhenTheReferenceRefusesThem() {
        let file = Self.partitionFile([
            ["PK": .s("USER#1"), "SK": .s("PROFILE"), "n": .n("-1.5e3"), "flag": .bool(true), "nothing": .null,
             "map": .m(["s": .s("é\"\\"), "list": .l([.n("0"), .ss(["a", "b"])])]), "ns": .ns(["1", "2"])],
        ])
        var disagreements: [String] = []
        for position in file.indices {
            var variants: [[UInt8]] = [Array(file[..<position] + file[(position + 1)...])]
            for replacement in Array("{}[]\":,0 -eSNMLtn\\".utf8) + [0x80] where replacement != file[position] {
                var changed = file
                changed[position] = replacement
                variants.append(changed)
            }
            for variant in variants {
                let direct = try? DynamoJSON.partitionItems(variant)
                if direct != Self.referenceItems(variant) { disagreements.append(String(decoding: variant, as: UTF8.self)) }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.first ?? "")")
    }

    @Test func shapesTheReferenceRefusesAreRefused() throws {
        let documents = [
            #"{"Items":[{"PK":{"S":"a"},"PK":{"S":"b"}}]}"#,          // duplicate attribute
            #"{"Items":[{"m":{"M":{"x":{"N":"1"},"x":{"N":"2"}}}}]}"#, // duplicate in a map
            #"{"Items":[],"Items":[]}"#,                               // duplicate at the top
            #"{"Items":[],"other":1,"other":2}"#,                       // duplicate unknown member
            #"{"Items":[{"a":{"S":"x","N":"1"}}]}"#,                   // two type keys
            #"{"Items":[{"a":{}}]}"#, #"{"Items":[{"a":{"X":"1"}}]}"#, #"{"Items":[{"a":{"N":" 1"}}]}"#,
            #"{"Items":[{"a":{"N":"01"}}]}"#, #"{"Items":[{"a":{"NULL":false}}]}"#, #"{"Items":[{"a":{"SS":[]}}]}"#,
            #"{"Items":[{"a":{"NS":["1","x"]}}]}"#, #"{"Items":[{"a":{"BOOL":"true"}}]}"#, #"{"Items":{}}"#,
            #"{"items":[]}"#, #"[]"#, #"{"Items":[]} x"#,
            // Nesting past the parser's limit: each attribute value is a level, as in JSONValue.
            #"{"Items":[{"a":"# + String(repeating: #"{"L":["#, count: 70) + String(repeating: "]}", count: 70) + "}]}",
        ]
        for document in documents {
            let bytes = Array(document.utf8)
            #expect(Self.referenceItems(bytes) == nil, "the reference accepts \(document.prefix(60))")
            #expect(throws: JSONParseError.self, "\(document.prefix(60))") { try DynamoJSON.partitionItems(bytes) }
        }
        let accepted = "\u{FEFF} {\"other\": [1, {\"x\": null}], \"Items\" : [ { \"a\" : { \"L\" : [ ] } } ] } \n"
        #expect(try DynamoJSON.partitionItems(Array(accepted.utf8)) == [["a": .l([])]])
        #expect(Self.referenceItems(Array(accepted.utf8)) == [["a": .l([])]])
    }
}
