/// A strict decoder of the CBOR subset WebAuthn needs (W3C WebAuthn Level 3 §6.5.4: attestation
/// objects and COSE keys are CTAP2-encoded CBOR). The one hand-written parser of the project: the
/// input comes straight from a client, so every refusal is an error value and every size is
/// checked before it is trusted.
///
/// Accepted: unsigned and negative integers, byte and text strings (valid UTF-8), arrays, maps,
/// `false`, `true` and `null`, all of definite length. Refused: indefinite lengths, tags (bignums
/// included), floats, `undefined` and other simple values, reserved additional information,
/// duplicate map keys, text that is not UTF-8, nesting deeper than `maximumDepth`, more than
/// `maximumItems` items, and (in `decode`) bytes after the item. Integer arguments need not be in
/// their shortest form: RFC 8949 calls such items well-formed, and nothing here depends on one
/// encoding per value (signatures are checked over the bytes as received).
public struct CBORDecoder: Sendable {
    public var maximumDepth: Int
    public var maximumItems: Int

    public init(maximumDepth: Int = 16, maximumItems: Int = 4096) {
        self.maximumDepth = maximumDepth
        self.maximumItems = maximumItems
    }

    /// Exactly one item filling `bytes`.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        let (value, length) = try decodePrefix(bytes)
        guard length == bytes.count else { throw CBORError(reason: "trailing bytes after the item", offset: length) }
        return value
    }

    /// The item at the start of `bytes` and how many bytes it took (authenticator data carries a
    /// COSE key followed by other fields, with no length of its own).
    public func decodePrefix(_ bytes: [UInt8]) throws(CBORError) -> (value: CBORValue, length: Int) {
        var reader = Reader(bytes: bytes, maximumDepth: maximumDepth, maximumItems: maximumItems)
        let value = try reader.item(depth: 0)
        return (value, reader.offset)
    }

    struct Reader {
        let bytes: [UInt8]
        let maximumDepth: Int
        let maximumItems: Int
        var offset = 0
        var items = 0
        /// Map keys compared with an earlier key of the same map for equality: one per duplicate,
        /// and otherwise only on a hash collision (what CBORDecoderTests counts).
        var keyComparisons = 0

        init(bytes: [UInt8], maximumDepth: Int, maximumItems: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
            self.maximumItems = maximumItems
        }

        func fail(_ reason: String, at position: Int? = nil) -> CBORError {
            CBORError(reason: reason, offset: position ?? offset)
        }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw fail("unexpected end of input") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: UInt64) throws(CBORError) -> ArraySlice<UInt8> {
            // Compared before any conversion: a declared length of 2⁶⁴ − 1 must not overflow.
            guard count <= UInt64(bytes.count - offset) else { throw fail("length \(count) runs past the end of input") }
            let start = offset
            offset += Int(count)
            return bytes[start..<offset]
        }

        /// The argument of a head whose additional information is `info` (RFC 8949 §3).
        mutating func argument(_ info: UInt8, at start: Int) throws(CBORError) -> UInt64 {
            switch info {
            case 0...23: return UInt64(info)
            case 24, 25, 26, 27:
                var value: UInt64 = 0
                for byte in try take(1 << UInt64(info - 24)) { value = value << 8 | UInt64(byte) }
                return value
            case 31: throw fail("indefinite length is not accepted", at: start)
            default: throw fail("reserved additional information \(info)", at: start)
            }
        }

        /// A count of nested items, bounded by what the input could possibly hold so that a huge
        /// declared count fails before any allocation.
        mutating func count(_ argument: UInt64, perItem minimumBytes: UInt64, at start: Int) throws(CBORError) -> Int {
            guard argument <= UInt64(bytes.count - offset) / minimumBytes else {
                throw fail("count \(argument) runs past the end of input", at: start)
            }
            return Int(argument)
        }

        mutating func item(depth: Int) throws(CBORError) -> CBORValue {
            let start = offset
            items += 1
            guard items <= maximumItems else { throw fail("more than \(maximumItems) items", at: start) }
            guard depth <= maximumDepth else { throw fail("nesting deeper than \(maximumDepth)", at: start) }
            let head = try byte()
            let major = head >> 5, info = head & 0x1F
            switch major {
            case 0: return .unsigned(try argument(info, at: start))
            case 1: return .negative(try argument(info, at: start))
            case 2: return .bytes(Array(try take(try argument(info, at: start))))
            case 3:
                let utf8 = try take(try argument(info, at: start))
                guard let text = String(validating: utf8, as: UTF8.self) else { throw fail("text string is not UTF-8", at: start) }
                return .text(text)
            case 4:
                let count = try count(try argument(info, at: start), perItem: 1, at: start)
                var elements: [CBORValue] = []
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try item(depth: depth + 1)) }
                return .array(elements)
            case 5:
                let count = try count(try argument(info, at: start), perItem: 2, at: start)
                var entries: [CBORMapEntry] = []
                entries.reserveCapacity(count)
                // Two readers of one map must never see different values for a key, so a repeated
                // key is refused. Comparing each key with every earlier one cost n²/2 comparisons
                // (a 2,000-key extension map, within maximumItems, cost 16 normal requests), so
                // keys are chained by hash: `newest` holds the last entry of each hash, `previous`
                // the entry of the same hash before each, and a key is compared only with those.
                // Equal values hash alike however their integers were encoded, as `==` requires.
                var newest: [Int: Int] = [:]
                var previous: [Int] = []
                newest.reserveCapacity(count)
                previous.reserveCapacity(count)
                for index in 0..<count {
                    let keyOffset = offset
                    let key = try item(depth: depth + 1)
                    let hash = key.hashValue
                    let head = newest[hash] ?? -1
                    var candidate = head
                    while candidate >= 0 {
                        keyComparisons += 1
                        if entries[candidate].key == key { throw fail("duplicate map key", at: keyOffset) }
                        candidate = previous[candidate]
                    }
                    previous.append(head)
                    newest[hash] = index
                    entries.append(CBORMapEntry(key: key, value: try item(depth: depth + 1)))
                }
                return .map(entries)
            case 6: throw fail("tags are not accepted", at: start)
            default:
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 25, 26, 27: throw fail("floating-point values are not accepted", at: start)
                case 31: throw fail("break outside an indefinite-length item", at: start)
                default: throw fail("simple value \(info == 24 ? "(one-byte)" : String(info)) is not accepted", at: start)
                }
            }
        }
    }
}
