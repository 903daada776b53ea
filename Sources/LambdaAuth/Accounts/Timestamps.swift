/// Stored timestamps are ISO-8601 strings (readable in `authctl store` output); `ttl` is epoch
/// seconds because DynamoDB's TTL requires it.
enum Timestamps {
    static func format(_ epochSeconds: Int64) -> String { ISO8601.format(epochSeconds: epochSeconds) }

    static func parse(_ value: AttributeValue) -> Int64? {
        switch value {
        case .s(let text): return ISO8601.parse(text).map { Int64($0.rounded(.down)) }
        case .n: return value.int64Value
        default: return nil
        }
    }
}
