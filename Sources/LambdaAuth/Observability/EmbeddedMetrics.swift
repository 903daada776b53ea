/// CloudWatch Embedded Metric Format (EMF): a JSON log line that CloudWatch Logs turns into
/// metrics, with no API call on the request path
/// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
///
/// Written directly rather than through swift-metrics and an EMF backend: the zips sit within a
/// few hundred kilobytes of their 6 MB budget, and one line per request needs no aggregation.
public enum EmbeddedMetrics {
    public enum Mode: String, Sendable {
        case off
        case emf
    }

    public static let defaultNamespace = "lambda-auth"

    /// The metrics of one request: `requests` (Count, 1) and `duration` (Milliseconds), under the
    /// dimensions `handler` and `outcome`, and under `outcome` alone so that an alarm can watch one
    /// outcome across every handler (the template's alarms do). `hookMilliseconds`: the time a
    /// request spent in the app's hooks, as `hookDuration`, when it called any (contract section 19).
    public static func line(namespace: String, handler: String, outcome: String, milliseconds: Double,
                            hookMilliseconds: Double? = nil, at now: Double) -> String {
        var metrics: [JSONValue] = [["Name": "requests", "Unit": "Count"], ["Name": "duration", "Unit": "Milliseconds"]]
        if hookMilliseconds != nil { metrics.append(["Name": "hookDuration", "Unit": "Milliseconds"]) }
        let directive: JSONValue = [
            "Namespace": .string(namespace),
            "Dimensions": [["handler", "outcome"], ["outcome"]],
            "Metrics": .array(metrics),
        ]
        var document: [String: JSONValue] = [
            "_aws": ["Timestamp": .number(Int64(now * 1000)), "CloudWatchMetrics": [directive]],
            "handler": .string(handler), "outcome": .string(outcome),
            "requests": 1, "duration": .number(JSONDecimal(milliseconds).description),
        ]
        if let hookMilliseconds { document["hookDuration"] = .number(JSONDecimal(hookMilliseconds).description) }
        return JSONValue.object(document).serialized()
    }

    /// CloudWatch's rule for a namespace: 1 to 255 of `0-9A-Za-z.-_/#:` and space, at least one
    /// of them not a space, and not AWS's own `AWS/` prefix.
    static func isValidNamespace(_ name: String) -> Bool {
        (1...255).contains(name.utf8.count) && !name.hasPrefix("AWS/") && name.utf8.contains { $0 != 0x20 }
            && name.utf8.allSatisfy { $0.isASCIIAlphanumeric(or: ".-_/#: ") }
    }
}
