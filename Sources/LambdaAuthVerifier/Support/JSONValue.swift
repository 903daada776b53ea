/// A JSON document as the product sees it.
///
/// We parse JSON ourselves rather than through Codable because the contract needs things
/// Codable hides: duplicate member names must be refused (RFC 7515 §4 and the contract's
/// MALFORMED_TOKEN), numbers must keep their exact text (DynamoDB `N` values, large `sub`s),
/// and output must be deterministic (sorted keys) so that stored files and replays compare
/// byte for byte.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The number's literal text, validated as a JSON number.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public static func number(_ value: Int) -> JSONValue { .number(String(value)) }
    public static func number(_ value: Int64) -> JSONValue { .number(String(value)) }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The number as a Double, when it is one.
    public var doubleValue: Double? {
        if case .number(let text) = self { return Double(text) }
        return nil
    }

    /// The number as an integer, when it is integral and fits; `1.0` and `1e3` count.
    public var int64Value: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        guard let double = Double(text), double.rounded() == double,
              double >= -9.2e18, double <= 9.2e18 else { return nil }
        return Int64(double)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(String(value)) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}
