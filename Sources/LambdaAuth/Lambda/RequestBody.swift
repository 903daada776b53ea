/// Typed access to a request body's fields; every wrong type or missing field is INVALID_REQUEST
/// naming the field.
public struct RequestBody: Sendable {
    public let fields: [String: JSONValue]

    public init(_ fields: [String: JSONValue]) { self.fields = fields }

    public func requiredString(_ name: String, maximumBytes: Int = 4096) throws(AuthError) -> String {
        guard let value = try optionalString(name, maximumBytes: maximumBytes) else {
            throw AuthError(.invalidRequest, "\(name) is required")
        }
        return value
    }

    /// nil when absent or null; an empty string counts as absent only when `emptyIsAbsent`.
    public func optionalString(_ name: String, maximumBytes: Int = 4096, emptyIsAbsent: Bool = false) throws(AuthError) -> String? {
        switch fields[name] {
        case nil, .null?: return nil
        case .string(let text)?:
            guard text.utf8.count <= maximumBytes else {
                throw AuthError(.invalidRequest, "\(name) is longer than \(maximumBytes) bytes")
            }
            if text.isEmpty {
                if emptyIsAbsent { return nil }
                throw AuthError(.invalidRequest, "\(name) must not be empty")
            }
            return text
        default:
            throw AuthError(.invalidRequest, "\(name) must be a string")
        }
    }

    public func optionalObject(_ name: String) throws(AuthError) -> RequestBody? {
        switch fields[name] {
        case nil, .null?: return nil
        case .object(let members)?: return RequestBody(members)
        default: throw AuthError(.invalidRequest, "\(name) must be an object")
        }
    }
}
