extension JSONValue {
    /// Compact JSON with members sorted by name, so equal values always serialise identically.
    public func serialized() -> String {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    public func serializedBytes() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output)
        return output
    }

    /// Indented JSON for people (authctl, demo output); still deterministic.
    public func prettyPrinted(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent)
        let inner = String(repeating: "  ", count: indent + 1)
        switch self {
        case .array(let elements) where !elements.isEmpty:
            let lines = elements.map { inner + $0.prettyPrinted(indent: indent + 1) }
            return "[\n" + lines.joined(separator: ",\n") + "\n" + pad + "]"
        case .object(let members) where !members.isEmpty:
            let lines = members.keys.sorted().map { key in
                inner + JSONValue.string(key).serialized() + ": " + members[key]!.prettyPrinted(indent: indent + 1)
            }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + pad + "}"
        default:
            return serialized()
        }
    }

    func write(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): JSONValue.writeString(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (position, key) in members.keys.sorted().enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                JSONValue.writeString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                members[key]!.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    package static func writeString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Runs that need no escape are copied whole: byte by byte, with a temporary array per
        // escape, this was most of encoding a stored user snapshot (a JSON string of quotes).
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for (index, byte) in bytes.enumerated() where byte == 0x22 || byte == 0x5C || byte < 0x20 {
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                output.append(0x5C)
                switch byte {
                case 0x22, 0x5C: output.append(byte)
                case 0x0A: output.append(UInt8(ascii: "n"))
                case 0x0D: output.append(UInt8(ascii: "r"))
                case 0x09: output.append(UInt8(ascii: "t"))
                default: output.append(contentsOf: ("u00" + [byte].hexString).utf8)
                }
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        output.append(UInt8(ascii: "\""))
    }
}
