import LambdaAuthVerifier

/// A DynamoDB attribute value. Numbers keep their decimal text, as DynamoDB's wire format does.
public indirect enum AttributeValue: Hashable, Sendable {
    case s(String)
    case n(String)
    case bool(Bool)
    case null
    case m([String: AttributeValue])
    case l([AttributeValue])
    case ss([String])
    case ns([String])

    public static func n(_ value: Int64) -> AttributeValue { .n(String(value)) }
    public static func n(_ value: Int) -> AttributeValue { .n(String(value)) }

    public var stringValue: String? {
        if case .s(let value) = self { return value }
        return nil
    }

    public var int64Value: Int64? {
        if case .n(let text) = self { return Int64(text) ?? Double(text).flatMap { Int64(exactly: $0) } }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var mapValue: [String: AttributeValue]? {
        if case .m(let value) = self { return value }
        return nil
    }

    public var listValue: [AttributeValue]? {
        if case .l(let value) = self { return value }
        return nil
    }

    /// Strings by their bytes (see ExactString), everything else as synthesized equality would.
    public static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool {
        switch (lhs, rhs) {
        case (.s(let a), .s(let b)), (.n(let a), .n(let b)): return a.sameBytes(as: b)
        case (.bool(let a), .bool(let b)): return a == b
        case (.null, .null): return true
        case (.m(let a), .m(let b)): return a.count == b.count && a.allSatisfy { name, value in b[name] == value }
        case (.l(let a), .l(let b)): return a == b
        case (.ss(let a), .ss(let b)), (.ns(let a), .ns(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.sameBytes(as: $1) }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .s(let text): hasher.combine(0); text.hashBytes(into: &hasher)
        case .n(let text): hasher.combine(1); text.hashBytes(into: &hasher)
        case .bool(let flag): hasher.combine(2); hasher.combine(flag)
        case .null: hasher.combine(3)
        case .m(let members):
            // Order-independent, as the map's equality is.
            hasher.combine(4)
            hasher.combine(members.reduce(0) { sum, member in
                var one = Hasher()
                one.combine(member.key)
                member.value.hash(into: &one)
                return sum ^ one.finalize()
            })
        case .l(let list): hasher.combine(5); hasher.combine(list)
        case .ss(let texts): hasher.combine(6); texts.forEach { $0.hashBytes(into: &hasher) }
        case .ns(let texts): hasher.combine(7); texts.forEach { $0.hashBytes(into: &hasher) }
        }
    }
}

public typealias Item = [String: AttributeValue]

/// The primary key of the single-table layout (contract section 6): `PK` and `SK`, both strings.
public struct TableKey: Hashable, Sendable, CustomStringConvertible {
    public var pk: String
    public var sk: String

    public init(pk: String, sk: String) {
        self.pk = pk
        self.sk = sk
    }

    public init?(item: Item) {
        guard let pk = item["PK"]?.stringValue, let sk = item["SK"]?.stringValue else { return nil }
        self.init(pk: pk, sk: sk)
    }

    public var item: Item { ["PK": .s(pk), "SK": .s(sk)] }
    public var description: String { "\(pk) / \(sk)" }

    /// Byte-exact, as DynamoDB tells keys apart (see ExactString).
    public static func == (lhs: TableKey, rhs: TableKey) -> Bool { lhs.pk.sameBytes(as: rhs.pk) && lhs.sk.sameBytes(as: rhs.sk) }

    public func hash(into hasher: inout Hasher) {
        pk.hashBytes(into: &hasher)
        sk.hashBytes(into: &hasher)
    }
}

// MARK: - DynamoDB JSON

public struct DynamoJSONError: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public var description: String { reason }
}

extension AttributeValue {
    /// `{"S": "..."}`, `{"N": "1"}`, … as DynamoDB's JSON protocol and its import format write them.
    public var dynamoJSON: JSONValue {
        switch self {
        case .s(let value): return ["S": .string(value)]
        case .n(let value): return ["N": .string(value)]
        case .bool(let value): return ["BOOL": .bool(value)]
        case .null: return ["NULL": true]
        case .m(let value): return ["M": .object(value.mapValues(\.dynamoJSON))]
        case .l(let value): return ["L": .array(value.map(\.dynamoJSON))]
        case .ss(let value): return ["SS": .array(value.map(JSONValue.string))]
        case .ns(let value): return ["NS": .array(value.map(JSONValue.string))]
        }
    }

    public init(dynamoJSON json: JSONValue) throws(DynamoJSONError) {
        guard case .object(let wrapper) = json, wrapper.count == 1, let (type, value) = wrapper.first else {
            throw DynamoJSONError(reason: "an attribute value must be an object with exactly one type key")
        }
        switch (type, value) {
        case ("S", .string(let text)): self = .s(text)
        case ("N", .string(let text)):
            guard AttributeValue.isValidNumber(text) else { throw DynamoJSONError(reason: "invalid N value \(text)") }
            self = .n(text)
        case ("BOOL", .bool(let flag)): self = .bool(flag)
        case ("NULL", .bool(true)): self = .null
        case ("M", .object(let members)):
            var map = [String: AttributeValue](minimumCapacity: members.count)
            for (name, member) in members { map[name] = try AttributeValue(dynamoJSON: member) }
            self = .m(map)
        case ("L", .array(let elements)):
            var list: [AttributeValue] = []
            for element in elements { list.append(try AttributeValue(dynamoJSON: element)) }
            self = .l(list)
        case ("SS", .array(let elements)):
            let strings = elements.compactMap(\.stringValue)
            guard strings.count == elements.count, !strings.isEmpty else { throw DynamoJSONError(reason: "invalid SS value") }
            self = .ss(strings)
        case ("NS", .array(let elements)):
            let numbers = elements.compactMap(\.stringValue)
            guard numbers.count == elements.count, !numbers.isEmpty, numbers.allSatisfy(AttributeValue.isValidNumber) else {
                throw DynamoJSONError(reason: "invalid NS value")
            }
            self = .ns(numbers)
        default:
            throw DynamoJSONError(reason: "unsupported attribute type \(type)")
        }
    }

    static func isValidNumber(_ text: String) -> Bool { JSONParser.isNumber(text) }
}

public enum DynamoJSON {
    public static func encode(_ item: Item) -> JSONValue {
        .object(item.mapValues(\.dynamoJSON))
    }

    public static func decodeItem(_ json: JSONValue) throws(DynamoJSONError) -> Item {
        guard case .object(let members) = json else { throw DynamoJSONError(reason: "an item must be a JSON object") }
        var item = Item(minimumCapacity: members.count)
        for (name, value) in members { item[name] = try AttributeValue(dynamoJSON: value) }
        return item
    }
}
