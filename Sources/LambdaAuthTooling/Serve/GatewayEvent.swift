import LambdaAuth

/// An HTTP request as API Gateway's HTTP API hands it to a Lambda function: the payload format
/// 2.0 event (AWS's "Working with AWS Lambda proxy integrations for HTTP APIs").
public enum GatewayEvent {
    /// `claims`: the JWT authorizer's, for a guarded route (nil: no authorizer on the route).
    public static func make(_ request: ServeListener.Request, route: HTTPRoute, requestID: String, claims: [String: JSONValue]?,
                            epochMilliseconds: Int64) -> JSONValue {
        let (rawPath, rawQuery) = split(request.target)
        var headers: [String: String] = [:]
        var cookies: [String] = []
        for (name, value) in request.headers {
            let lowered = name.lowercased()
            // API Gateway moves cookies to their own array and joins a repeated header with commas.
            if lowered == "cookie" {
                cookies += value.split(separator: ";").map { $0.trimmingCharacters(in: " ") }.filter { !$0.isEmpty }
                continue
            }
            headers[lowered] = headers[lowered].map { $0 + "," + value } ?? value
        }
        let http: [String: JSONValue] = [
            "method": .string(request.method), "path": .string(rawPath), "protocol": .string(request.httpVersion),
            "sourceIp": .string(request.peerAddress), "userAgent": .string(headers["user-agent"] ?? ""),
        ]
        let host = headers["host"] ?? "127.0.0.1"
        var context: [String: JSONValue] = [
            "accountId": "anonymous", "apiId": "local", "domainName": .string(host),
            "domainPrefix": .string(String(host.prefix { $0 != "." && $0 != ":" })),
            "http": .object(http), "requestId": .string(requestID), "routeKey": .string(routeKey(route)),
            "stage": "$default", "time": .string(apacheTime(epochMilliseconds / 1000)), "timeEpoch": .number(String(epochMilliseconds)),
        ]
        if let claims {
            context["authorizer"] = ["jwt": ["claims": .object(claims.mapValues { .string(claimText($0)) }), "scopes": .null]]
        }
        var event: [String: JSONValue] = [
            "version": "2.0", "routeKey": .string(routeKey(route)), "rawPath": .string(rawPath), "rawQueryString": .string(rawQuery),
            "headers": .object(headers.mapValues(JSONValue.string)), "requestContext": .object(context),
            "isBase64Encoded": false,
        ]
        if !cookies.isEmpty { event["cookies"] = .array(cookies.map(JSONValue.string)) }
        if let parameters = queryParameters(rawQuery) { event["queryStringParameters"] = .object(parameters.mapValues(JSONValue.string)) }
        if !request.body.isEmpty {
            if let text = String(validating: request.body, as: UTF8.self) {
                event["body"] = .string(text)
            } else {
                event["body"] = .string(Base64.encoded(request.body))
                event["isBase64Encoded"] = true
            }
        }
        return .object(event)
    }

    public static func routeKey(_ route: HTTPRoute) -> String { "\(route.method) \(route.path)" }

    /// API Gateway passes every claim as a string: a string as itself, anything else as its JSON text.
    public static func claimText(_ value: JSONValue) -> String {
        value.stringValue ?? value.serialized()
    }

    static func split(_ target: String) -> (path: String, query: String) {
        guard let mark = target.firstIndex(of: "?") else { return (target, "") }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }

    /// Decoded names and values, a repeated name's values joined with commas; nil without a query.
    static func queryParameters(_ query: String) -> [String: String]? {
        guard !query.isEmpty else { return nil }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecoded(String(parts[0]))
            let value = parts.count > 1 ? percentDecoded(String(parts[1])) : ""
            parameters[name] = parameters[name].map { $0 + "," + value } ?? value
        }
        return parameters
    }

    static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `25/Nov/2026:15:30:00 +0000`, as `requestContext.time` reads.
    static func apacheTime(_ epochSeconds: Int64) -> String {
        let iso = ISO8601.format(epochSeconds: epochSeconds)  // 2026-11-25T15:30:00Z
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let parts = Array(iso.utf8)
        guard parts.count >= 19, let month = Int(String(decoding: parts[5..<7], as: UTF8.self)), (1...12).contains(month) else { return iso }
        let text = { (range: Range<Int>) in String(decoding: parts[range], as: UTF8.self) }
        return "\(text(8..<10))/\(months[month - 1])/\(text(0..<4)):\(text(11..<19)) +0000"
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        var slice = self
        while slice.first == set { slice = slice.dropFirst() }
        while slice.last == set { slice = slice.dropLast() }
        return String(slice)
    }
}
