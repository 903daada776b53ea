/// A CBOR data item (RFC 8949) of the kinds WebAuthn uses: attestation objects, COSE keys and
/// authenticator extensions. Floats, tags, undefined and other simple values are never decoded
/// (`CBORDecoder` refuses them), so they have no case here.
public enum CBORValue: Hashable, Sendable {
    case unsigned(UInt64)
    /// The integer −1 − `n`: CBOR's negative range reaches −2⁶⁴, beyond Int64.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    /// Entries in the order they were encoded; keys are unique (the decoder refuses duplicates).
    case map([CBORMapEntry])
    case bool(Bool)
    case null

    /// The integer value when it fits an Int64 (COSE labels and algorithm identifiers do).
    public var integerValue: Int64? {
        switch self {
        case .unsigned(let value): return value <= UInt64(Int64.max) ? Int64(value) : nil
        case .negative(let value): return value <= UInt64(Int64.max) ? -1 - Int64(value) : nil
        default: return nil
        }
    }

    public var bytesValue: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var mapEntries: [CBORMapEntry]? {
        if case .map(let entries) = self { return entries }
        return nil
    }

    public var arrayValue: [CBORValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The value under `key` in a map; nil when this is not a map or has no such key.
    public subscript(key: CBORValue) -> CBORValue? {
        mapEntries?.first(where: { $0.key == key })?.value
    }

    public subscript(label: Int64) -> CBORValue? {
        self[label >= 0 ? .unsigned(UInt64(label)) : .negative(UInt64(-1 - label))]
    }

    public subscript(text: String) -> CBORValue? { self[.text(text)] }

    /// Written out rather than synthesized: the synthesized comparison of this recursive enum was
    /// inlined at each use (the map lookup and the decoder's duplicate-key check, 17 KB of code
    /// apiece in a size-optimised build, against the zips' ceiling).
    @inline(never)
    public static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case let (.unsigned(left), .unsigned(right)), let (.negative(left), .negative(right)): return left == right
        case let (.bytes(left), .bytes(right)): return left == right
        case let (.text(left), .text(right)): return left == right
        case let (.array(left), .array(right)): return left == right
        case let (.map(left), .map(right)): return left == right
        case let (.bool(left), .bool(right)): return left == right
        case (.null, .null): return true
        default: return false
        }
    }

    /// Written out for the same reason as `==`, and to agree with it: each case's tag, then its
    /// contents (a map's entries in their order, as `==` compares them).
    @inline(never)
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .unsigned(let value): hasher.combine(0 as UInt8); hasher.combine(value)
        case .negative(let value): hasher.combine(1 as UInt8); hasher.combine(value)
        case .bytes(let value): hasher.combine(2 as UInt8); hasher.combine(value)
        case .text(let value): hasher.combine(3 as UInt8); hasher.combine(value)
        case .array(let items):
            hasher.combine(4 as UInt8)
            hasher.combine(items.count)
            for item in items { item.hash(into: &hasher) }
        case .map(let entries):
            hasher.combine(5 as UInt8)
            hasher.combine(entries.count)
            for entry in entries {
                entry.key.hash(into: &hasher)
                entry.value.hash(into: &hasher)
            }
        case .bool(let value): hasher.combine(6 as UInt8); hasher.combine(value)
        case .null: hasher.combine(7 as UInt8)
        }
    }
}

public struct CBORMapEntry: Equatable, Sendable {
    public let key: CBORValue
    public let value: CBORValue

    public init(key: CBORValue, value: CBORValue) {
        self.key = key
        self.value = value
    }
}

/// Why an input is not a CBOR item we accept, and where.
public struct CBORError: Error, Equatable, Sendable, CustomStringConvertible {
    public let reason: String
    public let offset: Int

    public init(reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "\(reason) at byte \(offset)" }
}
