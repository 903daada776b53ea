/// Parsed DynamoDB expressions, placeholders already resolved. Everything outside the subset the
/// product uses is refused while parsing, with a message that names the offending part.

enum PathElement: Hashable {
    case name(String)
    case index(Int)
}

struct AttributePath: Hashable, CustomStringConvertible {
    var elements: [PathElement]

    var description: String {
        elements.enumerated().map { offset, element in
            switch element {
            case .name(let name): return offset == 0 ? name : "." + name
            case .index(let index): return "[\(index)]"
            }
        }.joined()
    }

    /// The top-level attribute name when the path is exactly one name.
    var topLevelName: String? {
        if elements.count == 1, case .name(let name) = elements[0] { return name }
        return nil
    }
}

enum Operand {
    case path(AttributePath)
    case value(AttributeValue)
}

enum ComparisonOperator: String {
    case equal = "=", notEqual = "<>", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
}

indirect enum ConditionExpression {
    case comparison(Operand, ComparisonOperator, Operand)
    case between(Operand, low: Operand, high: Operand)
    case isIn(Operand, [Operand])
    case attributeExists(AttributePath)
    case attributeNotExists(AttributePath)
    case beginsWith(Operand, Operand)
    case and(ConditionExpression, ConditionExpression)
    case or(ConditionExpression, ConditionExpression)
    case not(ConditionExpression)
}

indirect enum UpdateOperand {
    case path(AttributePath)
    case value(AttributeValue)
    case ifNotExists(AttributePath, UpdateOperand)
}

enum SetValue {
    case operand(UpdateOperand)
    case plus(UpdateOperand, UpdateOperand)
    case minus(UpdateOperand, UpdateOperand)
}

struct UpdateExpression {
    var sets: [(AttributePath, SetValue)] = []
    var removes: [AttributePath] = []
}

enum SortKeyCondition {
    case comparison(ComparisonOperator, String)
    case between(String, String)
    case beginsWith(String)

    func matches(_ sortKey: String) -> Bool {
        func order(_ a: String, _ b: String) -> Int {
            if a.sameBytes(as: b) { return 0 }
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
        }
        switch self {
        case .comparison(let op, let value):
            let result = order(sortKey, value)
            switch op {
            case .equal: return result == 0
            case .notEqual: return result != 0
            case .less: return result < 0
            case .lessOrEqual: return result <= 0
            case .greater: return result > 0
            case .greaterOrEqual: return result >= 0
            }
        case .between(let low, let high): return order(sortKey, low) >= 0 && order(sortKey, high) <= 0
        case .beginsWith(let prefix): return sortKey.utf8.starts(with: prefix.utf8)
        }
    }

    /// Every sort key that can match lies in `lower ..< upper` (UTF-8 bytes; no `upper`: to the
    /// end); nil when the condition bounds nothing from below or matches no one range.
    var bounds: (lower: [UInt8], upper: [UInt8]?)? {
        switch self {
        case .beginsWith(let prefix): return (Array(prefix.utf8), SortKeyCondition.end(ofPrefix: Array(prefix.utf8)))
        case .comparison(.equal, let value):
            // The one key, and those it begins (an upper bound one byte past the key).
            return (Array(value.utf8), SortKeyCondition.end(ofPrefix: Array(value.utf8)))
        case .comparison(.greater, let value), .comparison(.greaterOrEqual, let value): return (Array(value.utf8), nil)
        case .between(let low, let high): return (Array(low.utf8), SortKeyCondition.end(ofPrefix: Array(high.utf8)))
        case .comparison: return nil
        }
    }

    /// The least string above every string that begins with `prefix` (its last byte raised by
    /// one, trailing 0xFF bytes dropped first); nil when there is none.
    static func end(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return nil
    }

    /// Whether some sort key beginning with `prefix` can match: false only when none can. The
    /// keys beginning with `prefix` are the strings from `prefix` itself (the least) up to, but
    /// not including, `prefix` with its last byte raised by one; every one of them in between.
    func mayMatch(prefix: String) -> Bool {
        let low = Array(prefix.utf8)
        guard let last = low.last, last < 0xFF else { return true }
        let high = low.dropLast() + [last + 1]
        func less(_ a: [UInt8], _ b: String) -> Bool { a.lexicographicallyPrecedes(b.utf8) }
        func lessOrSame(_ a: [UInt8], _ b: String) -> Bool { !b.utf8.lexicographicallyPrecedes(a) }
        // Some key of the range lies above `value` exactly when `value` lies below the range's end.
        func above(_ value: String) -> Bool { value.utf8.lexicographicallyPrecedes(high) }
        switch self {
        case .comparison(let op, let value):
            switch op {
            case .equal: return value.utf8.starts(with: low)
            case .notEqual: return true
            case .less: return less(low, value)
            case .lessOrEqual: return lessOrSame(low, value)
            case .greater, .greaterOrEqual: return above(value)
            }
        case .between(let from, let to): return above(from) && lessOrSame(low, to)
        case .beginsWith(let start): return start.utf8.starts(with: low) || low.starts(with: start.utf8)
        }
    }
}

struct KeyCondition {
    var partitionKey: String
    var sortKey: SortKeyCondition?
}
