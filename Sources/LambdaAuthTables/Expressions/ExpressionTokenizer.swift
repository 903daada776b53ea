/// Tokens of DynamoDB's expression language, the part of it the product uses.
enum ExpressionToken: Equatable {
    /// A bare attribute name or a keyword/function name (`AND`, `begins_with`, `SET`).
    case word(String)
    /// `#name`, resolved through ExpressionAttributeNames.
    case namePlaceholder(String)
    /// `:value`, resolved through ExpressionAttributeValues.
    case valuePlaceholder(String)
    /// A list index inside `[...]`.
    case integer(Int)
    case symbol(String)
    case end

    var display: String {
        switch self {
        case .word(let text), .namePlaceholder(let text), .valuePlaceholder(let text), .symbol(let text): return text
        case .integer(let value): return String(value)
        case .end: return "end of expression"
        }
    }

    func isKeyword(_ keyword: String) -> Bool {
        if case .word(let text) = self { return text.uppercased() == keyword }
        return false
    }
}

enum ExpressionTokenizer {
    static func tokenize(_ text: String) throws(TableError) -> [ExpressionToken] {
        let bytes = Array(text.utf8)
        guard bytes.count <= 4096 else { throw .invalidRequest("expression longer than 4 KB") }
        var tokens: [ExpressionToken] = []
        var index = 0
        func isWordByte(_ byte: UInt8) -> Bool {
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95
        }
        func word(from start: Int) -> String {
            var end = start
            while end < bytes.count, isWordByte(bytes[end]) { end += 1 }
            index = end
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D:
                index += 1
            case UInt8(ascii: "#"), UInt8(ascii: ":"):
                let name = word(from: index + 1)
                guard !name.isEmpty else {
                    throw .invalidRequest("a placeholder needs a name after '\(Character(Unicode.Scalar(byte)))'")
                }
                tokens.append(byte == UInt8(ascii: "#") ? .namePlaceholder("#" + name) : .valuePlaceholder(":" + name))
            case UInt8(ascii: "<"):
                if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "=") || bytes[index + 1] == UInt8(ascii: ">") {
                    tokens.append(.symbol(bytes[index + 1] == UInt8(ascii: "=") ? "<=" : "<>"))
                    index += 2
                } else {
                    tokens.append(.symbol("<"))
                    index += 1
                }
            case UInt8(ascii: ">"):
                if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "=") {
                    tokens.append(.symbol(">="))
                    index += 2
                } else {
                    tokens.append(.symbol(">"))
                    index += 1
                }
            case UInt8(ascii: "="), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: "."),
                 UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "+"), UInt8(ascii: "-"):
                tokens.append(.symbol(String(Character(Unicode.Scalar(byte)))))
                index += 1
            case 48...57:
                let digits = word(from: index)
                guard let value = Int(digits), value < 1_000_000 else {
                    throw .invalidRequest("unexpected '\(digits)': literals are not allowed, use a :value placeholder")
                }
                tokens.append(.integer(value))
            default:
                guard isWordByte(byte) else {
                    let character = String(decoding: bytes[index..<min(index + 1, bytes.count)], as: UTF8.self)
                    throw .invalidRequest("unexpected character '\(character)' at offset \(index)")
                }
                tokens.append(.word(word(from: index)))
            }
        }
        tokens.append(.end)
        return tokens
    }
}
