/// Evaluates parsed expressions against an item the way DynamoDB does: comparisons between
/// different types are false, strings order by their UTF-8 bytes, numbers compare exactly.
extension AttributeValue {
    /// DynamoDB equality: numbers by value (`1` = `1.0`), sets regardless of order.
    func dynamoEquals(_ other: AttributeValue) -> Bool {
        switch (self, other) {
        case (.n(let a), .n(let b)): return DecimalNumber(a) == DecimalNumber(b)
        case (.ss(let a), .ss(let b)): return Set(a) == Set(b)
        case (.ns(let a), .ns(let b)): return Set(a.compactMap(DecimalNumber.init).map(\.description))
            == Set(b.compactMap(DecimalNumber.init).map(\.description))
        case (.m(let a), .m(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map(value.dynamoEquals) ?? false }
        case (.l(let a), .l(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.dynamoEquals($1) }
        default: return self == other
        }
    }

    /// -1, 0, 1 for values DynamoDB can order (two S or two N); nil otherwise.
    func dynamoOrder(_ other: AttributeValue) -> Int? {
        switch (self, other) {
        case (.s(let a), .s(let b)):
            if a.sameBytes(as: b) { return 0 }
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
        case (.n(let a), .n(let b)):
            guard let left = DecimalNumber(a), let right = DecimalNumber(b) else { return nil }
            return left == right ? 0 : (left < right ? -1 : 1)
        default: return nil
        }
    }

    func value(at path: AttributePath) -> AttributeValue? {
        var current: AttributeValue? = self
        for element in path.elements {
            switch (element, current) {
            case (.name(let name), .m(let map)?): current = map[name]
            case (.index(let index), .l(let list)?): current = index < list.count ? list[index] : nil
            default: return nil
            }
        }
        return current
    }
}

extension Item {
    func value(at path: AttributePath) -> AttributeValue? {
        guard case .name(let first) = path.elements[0], let top = self[first] else { return nil }
        return top.value(at: AttributePath(elements: Array(path.elements.dropFirst())))
    }
}

enum ExpressionEvaluator {
    /// `item` is nil when the item does not exist (or is hidden by its ttl).
    static func evaluate(_ condition: ConditionExpression, on item: Item?) -> Bool {
        let item = item ?? [:]
        func resolve(_ operand: Operand) -> AttributeValue? {
            switch operand {
            case .value(let value): return value
            case .path(let path): return item.value(at: path)
            }
        }
        switch condition {
        case .comparison(let left, let op, let right):
            guard let a = resolve(left), let b = resolve(right) else { return op == .notEqual }
            switch op {
            case .equal: return a.dynamoEquals(b)
            case .notEqual: return !a.dynamoEquals(b)
            case .less: return a.dynamoOrder(b).map { $0 < 0 } ?? false
            case .lessOrEqual: return a.dynamoOrder(b).map { $0 <= 0 } ?? false
            case .greater: return a.dynamoOrder(b).map { $0 > 0 } ?? false
            case .greaterOrEqual: return a.dynamoOrder(b).map { $0 >= 0 } ?? false
            }
        case .between(let subject, let low, let high):
            guard let value = resolve(subject), let lower = resolve(low), let upper = resolve(high),
                  let fromLow = value.dynamoOrder(lower), let toHigh = value.dynamoOrder(upper) else { return false }
            return fromLow >= 0 && toHigh <= 0
        case .isIn(let subject, let candidates):
            guard let value = resolve(subject) else { return false }
            return candidates.contains { resolve($0).map(value.dynamoEquals) ?? false }
        case .attributeExists(let path): return item.value(at: path) != nil
        case .attributeNotExists(let path): return item.value(at: path) == nil
        case .beginsWith(let subject, let prefix):
            guard case .s(let text)? = resolve(subject), case .s(let start)? = resolve(prefix) else { return false }
            return text.utf8.starts(with: start.utf8)
        case .and(let left, let right): return evaluate(left, on: item) && evaluate(right, on: item)
        case .or(let left, let right): return evaluate(left, on: item) || evaluate(right, on: item)
        case .not(let inner): return !evaluate(inner, on: item)
        }
    }

    /// The item after the update. Every operand reads the item as it was before the update, as in
    /// DynamoDB. Key attributes cannot be changed.
    static func apply(_ update: UpdateExpression, to original: Item, keyNames: Set<String>) throws(TableError) -> Item {
        func operand(_ input: UpdateOperand) throws(TableError) -> AttributeValue {
            switch input {
            case .value(let value): return value
            case .path(let path):
                guard let value = original.value(at: path) else {
                    throw .invalidRequest("the update expression refers to an attribute that does not exist in the item: \(path)")
                }
                return value
            case .ifNotExists(let path, let fallback):
                if let value = original.value(at: path) { return value }
                return try operand(fallback)
            }
        }
        func arithmetic(_ left: UpdateOperand, _ right: UpdateOperand, subtract: Bool) throws(TableError) -> AttributeValue {
            guard case .n(let a) = try operand(left), case .n(let b) = try operand(right),
                  let x = DecimalNumber(a), let y = DecimalNumber(b) else {
                throw .invalidRequest("an operand of + or - in the update expression is not a number")
            }
            guard let result = x + (subtract ? -y : y) else {
                throw .invalidRequest("number overflow: the result needs more than 38 significant digits")
            }
            return .n(result.description)
        }
        var item = original
        var assignments: [(AttributePath, AttributeValue)] = []
        for (path, setValue) in update.sets {
            if let name = path.topLevelName, keyNames.contains(name) {
                throw .invalidRequest("cannot update attribute \(name): it is part of the key")
            }
            switch setValue {
            case .operand(let value): assignments.append((path, try operand(value)))
            case .plus(let left, let right): assignments.append((path, try arithmetic(left, right, subtract: false)))
            case .minus(let left, let right): assignments.append((path, try arithmetic(left, right, subtract: true)))
            }
        }
        for (path, value) in assignments { try assign(value, at: path, in: &item) }
        for path in update.removes {
            if let name = path.topLevelName, keyNames.contains(name) {
                throw .invalidRequest("cannot remove attribute \(name): it is part of the key")
            }
            remove(path, from: &item)
        }
        return item
    }

    private static func assign(_ value: AttributeValue, at path: AttributePath, in item: inout Item) throws(TableError) {
        guard case .name(let first) = path.elements[0] else { throw .invalidRequest("invalid document path \(path)") }
        let rest = Array(path.elements.dropFirst())
        if rest.isEmpty {
            item[first] = value
            return
        }
        guard var top = item[first] else {
            throw .invalidRequest("the document path provided in the update expression is invalid for update: \(path)")
        }
        try assign(value, at: rest[...], in: &top, path: path)
        item[first] = top
    }

    private static func assign(_ value: AttributeValue, at elements: ArraySlice<PathElement>, in target: inout AttributeValue,
                               path: AttributePath) throws(TableError) {
        let invalid = TableError.invalidRequest("the document path provided in the update expression is invalid for update: \(path)")
        guard let element = elements.first else {
            target = value
            return
        }
        let rest = elements.dropFirst()
        switch (element, target) {
        case (.name(let name), .m(var map)):
            if rest.isEmpty {
                map[name] = value
            } else {
                guard var child = map[name] else { throw invalid }
                try assign(value, at: rest, in: &child, path: path)
                map[name] = child
            }
            target = .m(map)
        case (.index(let index), .l(var list)):
            if index >= list.count {
                guard rest.isEmpty else { throw invalid }
                list.append(value) // DynamoDB appends when the index is past the end.
            } else {
                try assign(value, at: rest, in: &list[index], path: path)
            }
            target = .l(list)
        default:
            throw invalid
        }
    }

    private static func remove(_ path: AttributePath, from item: inout Item) {
        guard case .name(let first) = path.elements[0] else { return }
        let rest = path.elements.dropFirst()
        if rest.isEmpty {
            item[first] = nil
            return
        }
        guard var top = item[first] else { return }
        remove(rest, from: &top)
        item[first] = top
    }

    private static func remove(_ elements: ArraySlice<PathElement>, from target: inout AttributeValue) {
        guard let element = elements.first else { return }
        let rest = elements.dropFirst()
        switch (element, target) {
        case (.name(let name), .m(var map)):
            if rest.isEmpty { map[name] = nil } else if var child = map[name] {
                remove(rest, from: &child)
                map[name] = child
            }
            target = .m(map)
        case (.index(let index), .l(var list)) where index < list.count:
            if rest.isEmpty { list.remove(at: index) } else { remove(rest, from: &list[index]) }
            target = .l(list)
        default:
            return
        }
    }
}
