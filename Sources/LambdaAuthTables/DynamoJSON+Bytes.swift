import LambdaAuthVerifier

/// DynamoDB JSON read from bytes straight into items, and written from items straight to bytes:
/// the local store's partition files and log records are most of what a process parses and
/// writes, and going through `JSONValue` built every value twice. Both accept and produce exactly
/// what the `JSONValue` route does (`DynamoJSONBytesTests` compares them).
extension DynamoJSON {
    /// The items of a partition file, `{"Items": [...]}`.
    static func partitionItems(_ bytes: [UInt8]) throws(JSONParseError) -> [Item] {
        try member("Items", of: bytes) { (parser: inout JSONParser) throws(JSONParseError) in try parser.parseItemList() }
    }

    /// One item of a partition file as its key attributes, its `ttl` and where its text is.
    struct PartitionEntry {
        var partitionKey: AttributeValue?
        var sortKey: AttributeValue?
        var ttl: AttributeValue?
        var text: Range<Int> = 0..<0
    }

    /// A partition file's items, `{"Items": [...]}`, with only their keys and ttls parsed: the
    /// other attributes are passed over (their nesting and strings' ends checked) and parsed
    /// when the item is used (`LazyItem`). Parsing every item of a file whose few items a whole
    /// process wants grew its time with the user's every session of the day.
    static func partitionEntries(_ bytes: [UInt8]) throws(JSONParseError) -> [PartitionEntry] {
        try member("Items", of: bytes) { (parser: inout JSONParser) throws(JSONParseError) in
            var entries: [PartitionEntry] = []
            try parser.parseElements { (parser: inout JSONParser) throws(JSONParseError) in
                var entry = PartitionEntry()
                let start = parser.offset
                try parser.parseMembers { (parser: inout JSONParser, name: String, offset: Int) throws(JSONParseError) in
                    func once(_ value: inout AttributeValue?) throws(JSONParseError) {
                        guard value == nil else { throw JSONParseError(kind: .duplicateMember(name), offset: offset, reason: "") }
                        value = try parser.parseAttributeValue()
                    }
                    switch name {
                    case "PK": try once(&entry.partitionKey)
                    case "SK": try once(&entry.sortKey)
                    case "ttl": try once(&entry.ttl)
                    default: _ = try parser.skipObject()
                    }
                }
                entry.text = start..<parser.offset
                entries.append(entry)
            }
            return entries
        }
    }

    /// The keys of an index file, `{"Keys": [...]}`, as items.
    static func indexKeys(_ bytes: [UInt8]) throws(JSONParseError) -> [Item] {
        try member("Keys", of: bytes) { (parser: inout JSONParser) throws(JSONParseError) in try parser.parseItemList() }
    }

    /// The item of an export line, `{"Item": {...}}` and nothing else.
    package static func exportLine(_ bytes: [UInt8]) throws(JSONParseError) -> Item {
        try member("Item", of: bytes, alone: true) { (parser: inout JSONParser) throws(JSONParseError) in try parser.parseItem() }
    }

    /// The changes of one log record, `{"changes": [{"key": item, "item": item}, ...]}` (no
    /// `item`: a deletion).
    static func logChanges(_ bytes: [UInt8]) throws(JSONParseError) -> [(key: Item, item: Item?)] {
        try member("changes", of: bytes) { (parser: inout JSONParser) throws(JSONParseError) in
            var changes: [(key: Item, item: Item?)] = []
            try parser.parseElements { (parser: inout JSONParser) throws(JSONParseError) in
                var key: Item?, item: Item?
                try parser.parseMembers(keeping: ["key", "item"]) { (parser: inout JSONParser, name: String) throws(JSONParseError) in
                    if name == "key" { key = try parser.parseItem() } else { item = try parser.parseItem() }
                }
                guard let key else { throw parser.fail("a change without a key") }
                changes.append((key, item))
            }
            return changes
        }
    }

    /// The changes of one log record with each after-image's bytes left unparsed (its range in
    /// `bytes`; nil: a deletion). A new process reads the whole log, and most of its items are
    /// never looked at: parsing every one was a sixth of a whole-process sign-in.
    static func logChangeRanges(_ bytes: [UInt8]) throws(JSONParseError) -> [(key: Item, item: Range<Int>?)] {
        try member("changes", of: bytes) { (parser: inout JSONParser) throws(JSONParseError) in
            var changes: [(key: Item, item: Range<Int>?)] = []
            try parser.parseElements { (parser: inout JSONParser) throws(JSONParseError) in
                var key: Item?, item: Range<Int>?
                try parser.parseMembers(keeping: ["key", "item"]) { (parser: inout JSONParser, name: String) throws(JSONParseError) in
                    if name == "key" { key = try parser.parseItem() } else { item = try parser.skipObject() }
                }
                guard let key else { throw parser.fail("a change without a key") }
                changes.append((key, item))
            }
            return changes
        }
    }

    /// An item's DynamoDB JSON, alone.
    static func item(_ bytes: [UInt8]) throws(JSONParseError) -> Item {
        var parser = JSONParser(bytes: bytes)
        return try parser.parseDocument { (parser: inout JSONParser) throws(JSONParseError) in try parser.parseItem() }
    }

    /// A JSON object text's member `name`, read by `value`. Other members are read and dropped,
    /// or refused when `alone`; a missing member is refused.
    private static func member<Value>(_ name: String, of bytes: [UInt8], alone: Bool = false,
                                      _ value: (inout JSONParser) throws(JSONParseError) -> Value) throws(JSONParseError) -> Value {
        var parser = JSONParser(bytes: bytes)
        return try parser.parseDocument { (parser: inout JSONParser) throws(JSONParseError) -> Value in
            var result: Value?
            var others = false
            try parser.parseMembers(keeping: [name]) { (parser: inout JSONParser, _: String) throws(JSONParseError) in
                result = try value(&parser)
            } other: { others = true }
            guard let result, !(alone && others) else {
                throw parser.fail(alone ? "expected {\"\(name)\": ...} alone" : "expected {\"\(name)\": ...}")
            }
            return result
        }
    }

    /// `encode(item).serializedBytes()`, byte for byte, without the `JSONValue` in between.
    static func write(_ item: Item, to output: inout [UInt8]) {
        writeMap(item, to: &output)
    }

    package static func encodedBytes(_ item: Item) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(item, to: &output)
        return output
    }

    /// At least `encodedBytes(item).count`, without writing anything: every string counted as if
    /// each of its bytes needed a six-byte escape, every number and wrapper at its longest. The
    /// item-size check encodes only the items this cannot clear (a write's items are a few KB).
    static func encodedSizeBound(_ item: Item) -> Int {
        func stringSize(_ text: String) -> Int { 2 + 6 * text.utf8.count }
        func mapSize(_ map: [String: AttributeValue]) -> Int {
            map.reduce(2) { $0 + stringSize($1.key) + 2 + valueSize($1.value) }
        }
        func valueSize(_ value: AttributeValue) -> Int {
            let wrapper = #"{"NULL":}"#.utf8.count
            switch value {
            case .s(let text), .n(let text): return wrapper + stringSize(text)
            case .bool, .null: return wrapper + 5
            case .m(let members): return wrapper + mapSize(members)
            case .l(let list): return list.reduce(wrapper + 2) { $0 + valueSize($1) + 1 }
            case .ss(let list), .ns(let list): return list.reduce(wrapper + 2) { $0 + stringSize($1) + 1 }
            }
        }
        return mapSize(item)
    }

    private static func writeMap(_ map: [String: AttributeValue], to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        for (position, name) in map.keys.sorted().enumerated() {
            if position > 0 { output.append(UInt8(ascii: ",")) }
            JSONValue.writeString(name, to: &output)
            output.append(UInt8(ascii: ":"))
            write(map[name]!, to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    private static func write(_ value: AttributeValue, to output: inout [UInt8]) {
        func typed(_ type: StaticString, _ body: (inout [UInt8]) -> Void) {
            output.append(contentsOf: #"{""#.utf8)
            output.append(contentsOf: UnsafeBufferPointer(start: type.utf8Start, count: type.utf8CodeUnitCount))
            output.append(contentsOf: #"":"#.utf8)
            body(&output)
            output.append(UInt8(ascii: "}"))
        }
        func strings(_ list: [String], _ output: inout [UInt8]) {
            output.append(UInt8(ascii: "["))
            for (position, text) in list.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                JSONValue.writeString(text, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        }
        switch value {
        case .s(let text): typed("S") { JSONValue.writeString(text, to: &$0) }
        case .n(let text): typed("N") { JSONValue.writeString(text, to: &$0) }
        case .bool(let flag): typed("BOOL") { $0.append(contentsOf: (flag ? "true" : "false").utf8) }
        case .null: typed("NULL") { $0.append(contentsOf: "true".utf8) }
        case .m(let map): typed("M") { writeMap(map, to: &$0) }
        case .l(let list):
            typed("L") { output in
                output.append(UInt8(ascii: "["))
                for (position, element) in list.enumerated() {
                    if position > 0 { output.append(UInt8(ascii: ",")) }
                    write(element, to: &output)
                }
                output.append(UInt8(ascii: "]"))
            }
        case .ss(let list): typed("SS") { strings(list, &$0) }
        case .ns(let list): typed("NS") { strings(list, &$0) }
        }
    }
}

extension JSONParser {
    /// An object whose members named in `names` go to `member`; any other member is read, dropped
    /// and reported to `other`. Every name, known or not, may appear once (as `JSONValue.parse`
    /// requires).
    fileprivate mutating func parseMembers(keeping names: Set<String>,
                                           _ member: (inout JSONParser, String) throws(JSONParseError) -> Void,
                                           other: () -> Void = {}) throws(JSONParseError) {
        var seen: Set<String> = []
        try parseMembers { (parser: inout JSONParser, name: String, offset: Int) throws(JSONParseError) in
            guard seen.insert(name).inserted else { throw JSONParseError(kind: .duplicateMember(name), offset: offset, reason: "") }
            if names.contains(name) {
                try member(&parser, name)
            } else {
                _ = try parser.parseValue()
                other()
            }
        }
    }

    fileprivate mutating func parseItemList() throws(JSONParseError) -> [Item] {
        var items: [Item] = []
        try parseElements { (parser: inout JSONParser) throws(JSONParseError) in items.append(try parser.parseItem()) }
        return items
    }

    /// An item (or an `M` value): an object of attribute values, names unique.
    mutating func parseItem() throws(JSONParseError) -> Item {
        var members: [(name: String, value: AttributeValue, offset: Int)] = []
        members.reserveCapacity(16)
        try parseMembers { (parser: inout JSONParser, name: String, offset: Int) throws(JSONParseError) in
            members.append((name, try parser.parseAttributeValue(), offset))
        }
        // Made at its final size: growing it member by member rehashed at every doubling.
        var item = Item(minimumCapacity: members.count)
        for member in members where item.updateValue(member.value, forKey: member.name) != nil {
            throw JSONParseError(kind: .duplicateMember(member.name), offset: member.offset, reason: "")
        }
        return item
    }

    /// `{"S": "..."}`, `{"N": "1"}`, …: exactly one type key with a value of its type.
    mutating func parseAttributeValue() throws(JSONParseError) -> AttributeValue {
        let wrapper = "an attribute value must be an object with exactly one type key"
        try expect(UInt8(ascii: "{"), wrapper)
        // The wrapper object is a level of nesting, as it is for JSONValue.parse.
        try enter()
        defer { leave() }
        let type = try parseStringValue(wrapper)
        try expect(UInt8(ascii: ":"), "expected ':'")
        skipWhitespace()
        let value: AttributeValue
        switch type {
        case "S": value = .s(try parseStringValue())
        case "N": value = .n(try parseNumberText())
        case "BOOL":
            guard case .bool(let flag) = try parseValue() else { throw fail("BOOL must be true or false") }
            value = .bool(flag)
        case "NULL":
            guard case .bool(true) = try parseValue() else { throw fail("NULL must be true") }
            value = .null
        case "M": value = .m(try parseItem())
        case "L":
            var list: [AttributeValue] = []
            try parseElements { (parser: inout JSONParser) throws(JSONParseError) in list.append(try parser.parseAttributeValue()) }
            value = .l(list)
        case "SS", "NS":
            var list: [String] = []
            try parseElements { (parser: inout JSONParser) throws(JSONParseError) in
                list.append(type == "SS" ? try parser.parseStringValue() : try parser.parseNumberText())
            }
            guard !list.isEmpty else { throw fail("an empty \(type) value") }
            value = type == "SS" ? .ss(list) : .ns(list)
        default:
            throw fail("unsupported attribute type \(type)")
        }
        try expect(UInt8(ascii: "}"), wrapper)
        return value
    }

    /// A number in DynamoDB's form: a JSON string holding a JSON number.
    private mutating func parseNumberText() throws(JSONParseError) -> String {
        let text = try parseStringValue()
        guard JSONParser.isNumber(text) else { throw fail("invalid N value \(text)") }
        return text
    }
}
