import LambdaAuth

/// Compares a handler's response with a scenario's expectation. Volatile values (ids, tokens,
/// timestamps) are matched by shape with `<…>` patterns; values from earlier steps by `{{$name}}`.
///
/// Patterns (as whole JSON strings in the expectation):
///   <any>  <string>  <number>  <bool>  <jwt>  <timestamp>  <id>  <accessKeyId>  <secret40>
///   <not $name>  (a string different from the saved value `name`)
struct ResponseMatcher {
    let saved: [String: String]

    /// Human-readable differences; empty when the response matches.
    func differences(expected: JSONValue, actual: JSONValue?, path: String = "body") -> [String] {
        guard let actual else { return ["\(path): expected \(expected.serialized()), got nothing"] }
        if case .string(let pattern) = expected, let problem = match(pattern: pattern, actual) {
            return problem.isEmpty ? [] : ["\(path): \(problem)"]
        }
        switch (expected, actual) {
        case (.object(let want), .object(let got)):
            var out: [String] = []
            for key in want.keys.sorted() {
                out += differences(expected: want[key]!, actual: got[key], path: "\(path).\(key)")
            }
            for key in got.keys.sorted() where want[key] == nil {
                out.append("\(path).\(key): not expected, got \(short(got[key]!))")
            }
            return out
        case (.array(let want), .array(let got)):
            guard want.count == got.count else {
                return ["\(path): expected \(want.count) elements, got \(got.count)"]
            }
            return zip(want, got).enumerated().flatMap { index, pair in
                differences(expected: pair.0, actual: pair.1, path: "\(path)[\(index)]")
            }
        default:
            return expected == actual ? [] : ["\(path): expected \(short(expected)), got \(short(actual))"]
        }
    }

    /// nil: not a pattern (compare literally); "": matched; otherwise what is wrong.
    func match(pattern: String, _ actual: JSONValue) -> String? {
        if pattern.hasPrefix("{{$"), pattern.hasSuffix("}}") {
            let name = String(pattern.dropFirst(3).dropLast(2))
            guard let value = saved[name] else { return "no saved value named \(name)" }
            return actual == .string(value) ? "" : "expected the value saved as \(name), got \(short(actual))"
        }
        guard pattern.hasPrefix("<"), pattern.hasSuffix(">") else { return nil }
        let inner = String(pattern.dropFirst().dropLast())
        if inner.hasPrefix("not $") {
            let name = String(inner.dropFirst(5))
            guard let value = saved[name] else { return "no saved value named \(name)" }
            guard case .string(let text) = actual else { return "expected a string, got \(short(actual))" }
            return text != value ? "" : "expected a value different from \(name)"
        }
        let ok: Bool
        switch inner {
        case "any": ok = true
        case "number": if case .number = actual { ok = true } else { ok = false }
        case "bool": ok = actual.boolValue != nil
        case "string": ok = !(actual.stringValue ?? "").isEmpty
        case "jwt":
            let parts = (actual.stringValue ?? "").split(separator: ".", omittingEmptySubsequences: false)
            ok = parts.count == 3 && parts.allSatisfy { Base64.urlDecoded($0) != nil && !$0.isEmpty }
        case "timestamp": ok = actual.stringValue.flatMap(ISO8601.parse) != nil && actual.stringValue!.hasSuffix("Z")
        case "id":
            let text = actual.stringValue ?? ""
            ok = (8...64).contains(text.count) && text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
        case "accessKeyId":
            let text = actual.stringValue ?? ""
            ok = text.count == 20 && text.hasPrefix("ASIA")
                && text.dropFirst(4).allSatisfy { ("A"..."Z").contains($0) || ("2"..."7").contains($0) }
        case "secret40": ok = actual.stringValue?.count == 40
        default: return "unknown pattern \(pattern)"
        }
        return ok ? "" : "expected \(pattern), got \(short(actual))"
    }

    func short(_ value: JSONValue) -> String {
        let text = value.serialized()
        return text.count > 120 ? String(text.prefix(117)) + "..." : text
    }
}

extension JSONValue {
    /// The value at a dotted path (`user.identities.0.subject`).
    func value(at path: String) -> JSONValue? {
        var current: JSONValue? = self
        for component in path.split(separator: ".") {
            switch current {
            case .object(let members)?: current = members[String(component)]
            case .array(let elements)?:
                guard let index = Int(component), elements.indices.contains(index) else { return nil }
                current = elements[index]
            default: return nil
            }
        }
        return current
    }
}
