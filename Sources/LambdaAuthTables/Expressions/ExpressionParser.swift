/// Recursive-descent parser over the tokens; one instance per expression string.
struct ExpressionParser {
    private let tokens: [ExpressionToken]
    private var position = 0
    private let attributes: ExpressionAttributes
    private let kind: String

    private init(_ text: String, attributes: ExpressionAttributes, kind: String) throws(TableError) {
        tokens = try ExpressionTokenizer.tokenize(text)
        self.attributes = attributes
        self.kind = kind
    }

    static func condition(_ text: String, _ attributes: ExpressionAttributes) throws(TableError) -> ConditionExpression {
        var parser = try ExpressionParser(text, attributes: attributes, kind: "condition")
        let condition = try parser.parseOr()
        try parser.expectEnd()
        return condition
    }

    static func update(_ text: String, _ attributes: ExpressionAttributes) throws(TableError) -> UpdateExpression {
        var parser = try ExpressionParser(text, attributes: attributes, kind: "update")
        return try parser.parseUpdate()
    }

    static func keyCondition(_ text: String, _ attributes: ExpressionAttributes,
                             partitionName: String, sortName: String) throws(TableError) -> KeyCondition {
        let condition = try ExpressionParser.condition(text, attributes)
        func keyPart(_ condition: ConditionExpression) throws(TableError) -> (String, SortKeyCondition) {
            func name(_ operand: Operand) -> String? {
                if case .path(let path) = operand { return path.topLevelName }
                return nil
            }
            func string(_ operand: Operand) throws(TableError) -> String {
                guard case .value(let value) = operand else {
                    throw .invalidRequest("a key condition compares a key attribute with a :value placeholder")
                }
                guard case .s(let text) = value else {
                    throw .invalidRequest("key condition value type does not match the key schema (S)")
                }
                return text
            }
            switch condition {
            case .comparison(let left, let op, let right) where op != .notEqual:
                guard let attribute = name(left) else { break }
                return (attribute, .comparison(op, try string(right)))
            case .between(let subject, let low, let high):
                guard let attribute = name(subject) else { break }
                return (attribute, .between(try string(low), try string(high)))
            case .beginsWith(let subject, let prefix):
                guard let attribute = name(subject) else { break }
                return (attribute, .beginsWith(try string(prefix)))
            default:
                break
            }
            throw .invalidRequest("unsupported key condition: use KEY = :v, optionally AND one sort key condition "
                + "(=, <, <=, >, >=, BETWEEN, begins_with)")
        }
        var parts: [(String, SortKeyCondition)] = []
        if case .and(let left, let right) = condition {
            parts = [try keyPart(left), try keyPart(right)]
        } else {
            parts = [try keyPart(condition)]
        }
        guard let partitionIndex = parts.firstIndex(where: { $0.0 == partitionName }),
              case .comparison(.equal, let partitionValue) = parts[partitionIndex].1 else {
            throw .invalidRequest("the key condition must test \(partitionName) for equality")
        }
        parts.remove(at: partitionIndex)
        if let sortPart = parts.first {
            guard sortPart.0 == sortName else {
                throw .invalidRequest("key condition on \(sortPart.0): only \(partitionName) and \(sortName) may be used")
            }
            return KeyCondition(partitionKey: partitionValue, sortKey: sortPart.1)
        }
        return KeyCondition(partitionKey: partitionValue, sortKey: nil)
    }

    // MARK: - Tokens

    private var current: ExpressionToken { tokens[position] }

    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func unexpected(_ expected: String) -> TableError {
        .invalidRequest("invalid \(kind) expression: expected \(expected), found '\(current.display)'")
    }

    private mutating func expectSymbol(_ symbol: String) throws(TableError) {
        guard current == .symbol(symbol) else { throw unexpected("'\(symbol)'") }
        advance()
    }

    private mutating func expectEnd() throws(TableError) {
        guard current == .end else { throw unexpected("end of expression") }
    }

    private mutating func acceptKeyword(_ keyword: String) -> Bool {
        guard current.isKeyword(keyword) else { return false }
        advance()
        return true
    }

    // MARK: - Conditions

    private mutating func parseOr() throws(TableError) -> ConditionExpression {
        var left = try parseAnd()
        while acceptKeyword("OR") { left = .or(left, try parseAnd()) }
        return left
    }

    private mutating func parseAnd() throws(TableError) -> ConditionExpression {
        var left = try parseNot()
        while acceptKeyword("AND") { left = .and(left, try parseNot()) }
        return left
    }

    private mutating func parseNot() throws(TableError) -> ConditionExpression {
        if acceptKeyword("NOT") { return .not(try parseNot()) }
        return try parsePrimaryCondition()
    }

    private mutating func parsePrimaryCondition() throws(TableError) -> ConditionExpression {
        if current == .symbol("(") {
            advance()
            let inner = try parseOr()
            try expectSymbol(")")
            return inner
        }
        if case .word(let word) = current, tokens[position + 1] == .symbol("(") {
            advance()
            advance()
            let condition: ConditionExpression
            switch word {
            case "attribute_exists": condition = .attributeExists(try parsePath())
            case "attribute_not_exists": condition = .attributeNotExists(try parsePath())
            case "begins_with":
                let subject = try parseOperand()
                try expectSymbol(",")
                condition = .beginsWith(subject, try parseOperand())
            default:
                throw .invalidRequest("unsupported function \(word) in \(kind) expression "
                    + "(supported: attribute_exists, attribute_not_exists, begins_with)")
            }
            try expectSymbol(")")
            return condition
        }
        let left = try parseOperand()
        if acceptKeyword("BETWEEN") {
            let low = try parseOperand()
            guard acceptKeyword("AND") else { throw unexpected("AND in BETWEEN") }
            return .between(left, low: low, high: try parseOperand())
        }
        if acceptKeyword("IN") {
            try expectSymbol("(")
            var candidates = [try parseOperand()]
            while current == .symbol(",") {
                advance()
                candidates.append(try parseOperand())
            }
            try expectSymbol(")")
            guard candidates.count <= 100 else { throw .invalidRequest("IN takes at most 100 values") }
            return .isIn(left, candidates)
        }
        guard case .symbol(let symbol) = current, let op = ComparisonOperator(rawValue: symbol) else {
            throw unexpected("a comparison, BETWEEN or IN")
        }
        advance()
        return .comparison(left, op, try parseOperand())
    }

    private mutating func parseOperand() throws(TableError) -> Operand {
        if case .valuePlaceholder(let placeholder) = current {
            advance()
            return .value(try value(placeholder))
        }
        if case .word(let word) = current, tokens[position + 1] == .symbol("(") {
            throw .invalidRequest("unsupported function \(word) as an operand in \(kind) expression")
        }
        return .path(try parsePath())
    }

    private func value(_ placeholder: String) throws(TableError) -> AttributeValue {
        guard let value = attributes.values[placeholder] else {
            throw .invalidRequest("an expression attribute value used in the expression is not defined: \(placeholder)")
        }
        return value
    }

    private mutating func parseName() throws(TableError) -> String {
        switch current {
        case .word(let word):
            if ["AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE"].contains(word.uppercased()) {
                throw unexpected("an attribute name")
            }
            advance()
            return word
        case .namePlaceholder(let placeholder):
            guard let name = attributes.names[placeholder] else {
                throw .invalidRequest("an expression attribute name used in the expression is not defined: \(placeholder)")
            }
            advance()
            return name
        default:
            throw unexpected("an attribute name")
        }
    }

    private mutating func parsePath() throws(TableError) -> AttributePath {
        var elements: [PathElement] = [.name(try parseName())]
        while true {
            if current == .symbol(".") {
                advance()
                elements.append(.name(try parseName()))
            } else if current == .symbol("[") {
                advance()
                guard case .integer(let index) = current else { throw unexpected("a list index") }
                advance()
                try expectSymbol("]")
                elements.append(.index(index))
            } else {
                return AttributePath(elements: elements)
            }
        }
    }

    // MARK: - Updates

    private mutating func parseUpdate() throws(TableError) -> UpdateExpression {
        var update = UpdateExpression()
        var seenClauses: Set<String> = []
        while current != .end {
            guard case .word(let word) = current else { throw unexpected("SET or REMOVE") }
            let clause = word.uppercased()
            guard clause == "SET" || clause == "REMOVE" else {
                if clause == "ADD" || clause == "DELETE" {
                    throw .invalidRequest("unsupported update clause \(clause) (supported: SET, REMOVE)")
                }
                throw unexpected("SET or REMOVE")
            }
            guard seenClauses.insert(clause).inserted else {
                throw .invalidRequest("the \(clause) clause appears more than once in the update expression")
            }
            advance()
            repeat {
                if position > 0, current == .symbol(",") { advance() }
                if clause == "SET" {
                    let path = try parsePath()
                    try expectSymbol("=")
                    let first = try parseUpdateOperand()
                    if current == .symbol("+") || current == .symbol("-") {
                        let plus = current == .symbol("+")
                        advance()
                        let second = try parseUpdateOperand()
                        update.sets.append((path, plus ? .plus(first, second) : .minus(first, second)))
                    } else {
                        update.sets.append((path, .operand(first)))
                    }
                } else {
                    update.removes.append(try parsePath())
                }
            } while current == .symbol(",")
        }
        guard !update.sets.isEmpty || !update.removes.isEmpty else {
            throw .invalidRequest("the update expression is empty")
        }
        let paths = update.sets.map(\.0) + update.removes
        for (index, path) in paths.enumerated() {
            for other in paths[(index + 1)...] where other.elements.starts(with: path.elements) || path.elements.starts(with: other.elements) {
                throw .invalidRequest("two document paths overlap in the update expression: \(path) and \(other)")
            }
        }
        return update
    }

    private mutating func parseUpdateOperand() throws(TableError) -> UpdateOperand {
        if case .word(let word) = current, tokens[position + 1] == .symbol("(") {
            guard word == "if_not_exists" else {
                throw .invalidRequest("unsupported function \(word) in update expression (supported: if_not_exists)")
            }
            advance()
            advance()
            let path = try parsePath()
            try expectSymbol(",")
            let fallback = try parseUpdateOperand()
            try expectSymbol(")")
            return .ifNotExists(path, fallback)
        }
        switch try parseOperand() {
        case .path(let path): return .path(path)
        case .value(let value): return .value(value)
        }
    }
}
