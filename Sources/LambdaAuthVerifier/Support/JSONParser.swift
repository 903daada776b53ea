public struct JSONParseError: Error, Equatable, CustomStringConvertible, Sendable {
    public enum Kind: Equatable, Sendable {
        case syntax
        case duplicateMember(String)
        case tooDeep
    }
    public let kind: Kind
    public let offset: Int
    public let reason: String

    package init(kind: Kind, offset: Int, reason: String) {
        self.kind = kind
        self.offset = offset
        self.reason = reason
    }

    public var description: String {
        switch kind {
        case .duplicateMember(let name): return "duplicate member \"\(name)\" at byte \(offset)"
        case .tooDeep: return "nesting too deep at byte \(offset)"
        case .syntax: return "\(reason) at byte \(offset)"
        }
    }
}

extension JSONValue {
    /// Parses a complete JSON text (RFC 8259). Duplicate member names are an error.
    public static func parse<Bytes: Collection>(_ bytes: Bytes) throws(JSONParseError) -> JSONValue
    where Bytes.Element == UInt8 {
        var parser = JSONParser(bytes: Array(bytes))
        return try parser.parseDocument()
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}

/// The parser behind `JSONValue.parse`. Its steps are open to the package so that a reader of one
/// known shape (the store's DynamoDB JSON) can build its own values straight from the bytes.
package struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    var depth = 0
    /// The members of each object being parsed, one buffer per nesting depth (see parseObject).
    var pendingMembers: [[(name: String, value: JSONValue, offset: Int)]] = []
    static let maximumDepth = 128

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// Where the next byte to read is.
    package var offset: Int { index }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        try parseDocument { (parser: inout JSONParser) throws(JSONParseError) in try parser.parseValue() }
    }

    /// One complete text whose value `value` reads: a byte order mark and surrounding whitespace
    /// allowed, nothing after it.
    package mutating func parseDocument<Value>(_ value: (inout JSONParser) throws(JSONParseError) -> Value) throws(JSONParseError) -> Value {
        // A UTF-8 byte order mark is tolerated, as RFC 8259 §8.1 allows parsers to.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        let result = try value(&self)
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the JSON value") }
        return result
    }

    package func fail(_ reason: String) -> JSONParseError {
        JSONParseError(kind: .syntax, offset: index, reason: reason)
    }

    /// Skips whitespace, then tells whether `byte` comes next (without taking it).
    package mutating func nextIs(_ byte: UInt8) -> Bool {
        skipWhitespace()
        return index < bytes.count && bytes[index] == byte
    }

    /// Skips whitespace, then takes `byte` if it comes next.
    package mutating func consume(_ byte: UInt8) -> Bool {
        guard nextIs(byte) else { return false }
        index += 1
        return true
    }

    /// Skips whitespace, then takes `byte` or fails with `reason`.
    package mutating func expect(_ byte: UInt8, _ reason: String) throws(JSONParseError) {
        guard consume(byte) else { throw fail(reason) }
    }

    /// The members of the object that comes next, each handed to `member` with the parser at its
    /// value, which `member` must read. Duplicate names are the caller's to refuse.
    package mutating func parseMembers(_ member: (inout JSONParser, _ name: String, _ nameOffset: Int) throws(JSONParseError) -> Void)
        throws(JSONParseError) {
        try expect(UInt8(ascii: "{"), "expected an object")
        try enter()
        if consume(UInt8(ascii: "}")) {
            leave()
            return
        }
        repeat {
            guard nextIs(UInt8(ascii: "\"")) else { throw fail("expected a member name") }
            let nameOffset = index
            let name = try parseString()
            try expect(UInt8(ascii: ":"), "expected ':'")
            skipWhitespace()
            try member(&self, name, nameOffset)
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"), "expected ',' or '}'")
        leave()
    }

    /// The elements of the array that comes next, each handed to `element` to read.
    package mutating func parseElements(_ element: (inout JSONParser) throws(JSONParseError) -> Void) throws(JSONParseError) {
        try expect(UInt8(ascii: "["), "expected an array")
        try enter()
        if consume(UInt8(ascii: "]")) {
            leave()
            return
        }
        repeat {
            skipWhitespace()
            try element(&self)
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"), "expected ',' or ']'")
        leave()
    }

    /// Passes over the object that comes next without building it, and returns where its bytes
    /// are. Only its nesting and its strings' ends are checked: whoever uses the bytes parses them
    /// in full (the local store's log, whose records are checksummed, parses an item when read).
    package mutating func skipObject() throws(JSONParseError) -> Range<Int> {
        skipWhitespace()
        guard nextIs(UInt8(ascii: "{")) else { throw fail("expected an object") }
        let start = index
        var depth = 0
        repeat {
            guard index < bytes.count else { throw fail("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                while true {
                    guard index < bytes.count else { throw fail("unterminated string") }
                    let byte = bytes[index]
                    index += byte == UInt8(ascii: "\\") ? 2 : 1
                    if byte == UInt8(ascii: "\"") { break }
                }
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                guard depth <= JSONParser.maximumDepth else { throw fail("nested too deeply") }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
            default:
                break
            }
            index += 1
        } while depth > 0
        return start..<index
    }

    /// Skips whitespace, then reads a string; fails with `reason` when none comes next.
    package mutating func parseStringValue(_ reason: String = "expected a string") throws(JSONParseError) -> String {
        guard nextIs(UInt8(ascii: "\"")) else { throw fail(reason) }
        return try parseString()
    }

    package mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    package mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: String) throws(JSONParseError) {
        for expected in literal.utf8 {
            guard index < bytes.count, bytes[index] == expected else { throw fail("invalid literal") }
            index += 1
        }
    }

    /// One level deeper (an object or array begins); past `maximumDepth` the text is refused.
    package mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > JSONParser.maximumDepth {
            throw JSONParseError(kind: .tooDeep, offset: index, reason: "")
        }
    }

    package mutating func leave() { depth -= 1 }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        // Members are gathered first and the dictionary made at its final size: growing it one
        // member at a time rehashed every member at each doubling, which was a fifth of reading
        // a store's log (many objects of ten to twenty members). The gathering buffers are kept
        // per depth, so a document reuses them instead of allocating one per object.
        let level = depth - 1
        while pendingMembers.count <= level { pendingMembers.append([]) }
        defer { pendingMembers[level].removeAll(keepingCapacity: true) }
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object([:])
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail("expected a member name")
            }
            let nameOffset = index
            let name = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            pendingMembers[level].append((name, value, nameOffset))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; break }
            throw fail("expected ',' or '}'")
        }
        var members = [String: JSONValue](minimumCapacity: pendingMembers[level].count)
        for member in pendingMembers[level] {
            if members.updateValue(member.value, forKey: member.name) != nil {
                throw JSONParseError(kind: .duplicateMember(member.name), offset: member.offset, reason: "")
            }
        }
        depth -= 1
        return .object(members)
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(elements)
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        guard let end = JSONParser.endOfNumber(bytes, from: index) else { throw fail("invalid number") }
        index = end
        return .number(String(decoding: bytes[start..<end], as: UTF8.self))
    }

    /// Whether `text` is exactly one JSON number (RFC 8259 §6), nothing around it.
    package static func isNumber(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in endOfNumber(utf8, from: 0) == utf8.count }
    }

    /// Where the number starting at `start` ends, or nil when none starts there.
    static func endOfNumber<Bytes: RandomAccessCollection>(_ bytes: Bytes, from start: Int) -> Int?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        var index = start
        func isDigit(_ at: Int) -> Bool { at < bytes.endIndex && bytes[at] >= UInt8(ascii: "0") && bytes[at] <= UInt8(ascii: "9") }
        func skipDigits() { while isDigit(index) { index += 1 } }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.endIndex else { return nil }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(index) {
            skipDigits()
        } else {
            return nil
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { return nil }
            skipDigits()
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(index) else { return nil }
            skipDigits()
        }
        return index
    }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes, valid UTF-8.
        var highBits: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = bytes[start..<index]
                index += 1
                // ASCII (the usual case: member names, ids, URLs) is valid UTF-8 by construction;
                // the generic validating initialiser costs more than the rest of the parse.
                if highBits & 0x80 == 0 { return String(decoding: slice, as: UTF8.self) }
                guard let text = String(validating: slice, as: UTF8.self) else {
                    throw fail("invalid UTF-8 in string")
                }
                return text
            }
            highBits |= byte
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character in string") }
            index += 1
        }
        var scalars: [UInt8] = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: scalars, as: UTF8.self) else {
                    throw fail("invalid UTF-8 in string")
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try parseHex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                              bytes[index + 1] == UInt8(ascii: "u") else {
                            throw fail("unpaired surrogate")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw fail("unpaired surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw fail("invalid escape") }
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw fail("invalid escape")
                }
            default:
                if byte < 0x20 { throw fail("control character in string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("invalid escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
