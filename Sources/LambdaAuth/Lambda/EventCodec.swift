/// Decodes the three event shapes of the contract and encodes the matching response.
public enum EventCodec {
    /// Contract: a request body over 64 KiB is refused before its content is parsed.
    public static let maximumBodyBytes = 64 << 10
    /// Envelope headroom for HTTP events (headers, request context) around a maximal body,
    /// base64-encoded; anything larger cannot be a valid request and is refused unparsed.
    public static let maximumEventBytes = 256 << 10
    /// A DynamoDB Stream batch (the `events` handler) is as large as Lambda lets an event be.
    public static let maximumStreamBatchBytes = 6 << 20

    public struct Decoded: Sendable {
        public var kind: EventKind
        public var request: Result<InvocationRequest, AuthError>
    }

    /// Never throws: a bad event still has a kind (direct when unknown) and an error to answer.
    public static func decode(_ bytes: [UInt8]) -> Decoded {
        let streamBatch = isStreamBatch(bytes)
        guard bytes.count <= (streamBatch ? maximumStreamBatchBytes : maximumEventBytes) else {
            return Decoded(kind: .direct, request: .failure(tooLarge()))
        }
        let event: JSONValue
        do {
            event = try JSONValue.parse(bytes)
        } catch {
            return Decoded(kind: .direct, request: .failure(AuthError(.invalidRequest, "the event is not valid JSON (\(error))")))
        }
        guard case .object(let fields) = event else {
            return Decoded(kind: .direct, request: .failure(AuthError(.invalidRequest, "the event must be a JSON object")))
        }
        // Before the HTTP shapes: an HTTP API authorizer's event has their `version` and
        // `requestContext.http`, a REST REQUEST authorizer's their `httpMethod`.
        if let type = fields["type"]?.stringValue, type == "TOKEN" || type == "REQUEST",
           fields["routeArn"]?.stringValue != nil || fields["methodArn"]?.stringValue != nil {
            var headers: [String: String] = [:]
            if case .object(let raw)? = fields["headers"] {
                for (name, value) in raw { if let text = value.stringValue { headers[name.lowercased()] = text } }
            }
            return Decoded(kind: .authorizer, request: .success(InvocationRequest(kind: .authorizer, method: "GET", headers: headers, body: fields)))
        }
        if fields["version"]?.stringValue == "2.0", let http = fields["requestContext"]?["http"], http.objectValue != nil {
            let method = http["method"]?.stringValue ?? "POST"
            return Decoded(kind: .httpAPIv2, request: httpRequest(kind: .httpAPIv2, method: method, fields: fields))
        }
        if let method = fields["httpMethod"]?.stringValue, fields["requestContext"]?.objectValue != nil {
            return Decoded(kind: .restAPIv1, request: httpRequest(kind: .restAPIv1, method: method, fields: fields))
        }
        guard bytes.count <= maximumBodyBytes || (streamBatch && fields["Records"]?.arrayValue != nil) else {
            return Decoded(kind: .direct, request: .failure(tooLarge()))
        }
        return Decoded(kind: .direct, request: .success(InvocationRequest(kind: .direct, body: fields)))
    }

    /// Lambda's DynamoDB Stream event begins `{"Records":[`: told from its first bytes, so that
    /// no other event gets the larger limit before it is parsed.
    static func isStreamBatch(_ bytes: [UInt8]) -> Bool {
        let prefix = bytes.prefix(64).filter { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
        return prefix.starts(with: Array(#"{"Records":["#.utf8))
    }

    static func tooLarge() -> AuthError {
        AuthError(.invalidRequest, "the request body is larger than 64 KiB")
    }

    static func httpRequest(kind: EventKind, method: String, fields: [String: JSONValue]) -> Result<InvocationRequest, AuthError> {
        var headers: [String: String] = [:]
        if case .object(let raw)? = fields["headers"] {
            for (name, value) in raw {
                if let text = value.stringValue { headers[name.lowercased()] = text }
            }
        }
        var bodyBytes: [UInt8]
        switch fields["body"] {
        case .string(let text)?:
            bodyBytes = Array(text.utf8)
        case .null?, nil:
            bodyBytes = []
        default:
            return .failure(AuthError(.invalidRequest, "the event's body must be a string"))
        }
        if fields["isBase64Encoded"]?.boolValue == true {
            guard bodyBytes.count <= (maximumBodyBytes + 2) / 3 * 4 + 4 else { return .failure(tooLarge()) }
            guard let decoded = Base64.decoded(String(decoding: bodyBytes, as: UTF8.self)) else {
                return .failure(AuthError(.invalidRequest, "the body is marked base64 but is not valid base64"))
            }
            bodyBytes = decoded
        }
        guard bodyBytes.count <= maximumBodyBytes else { return .failure(tooLarge()) }
        // A DELETE (unlink) may come without a body; an empty body is an empty object.
        var body: [String: JSONValue] = [:]
        if !bodyBytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            do {
                guard case .object(let object) = try JSONValue.parse(bodyBytes) else {
                    return .failure(AuthError(.invalidRequest, "the request body must be a JSON object"))
                }
                body = object
            } catch {
                return .failure(AuthError(.invalidRequest, "the request body is not valid JSON (\(error))"))
            }
        }
        let path = (kind == .httpAPIv2 ? fields["rawPath"] ?? fields["requestContext"]?["http"]?["path"] : fields["path"])?.stringValue
        return .success(InvocationRequest(kind: kind, method: method.uppercased(), headers: headers, body: body,
                                          path: path ?? "", sourceIP: sourceIP(kind: kind, fields: fields)))
    }

    /// payload 2.0 and function URLs: `requestContext.http.sourceIp`; REST API (1.0):
    /// `requestContext.identity.sourceIp`.
    static func sourceIP(kind: EventKind, fields: [String: JSONValue]) -> String? {
        let context = fields["requestContext"]
        let address = kind == .httpAPIv2 ? context?["http"]?["sourceIp"] : context?["identity"]?["sourceIp"]
        guard let text = address?.stringValue, !text.isEmpty, text.utf8.count <= 64 else { return nil }
        return text
    }

    /// The response document for the event's kind; over HTTP, with `cors`'s headers for the
    /// request's `origin`.
    public static func encode(_ response: InvocationResponse, kind: EventKind, cors: CORSPolicy? = nil,
                              origin: String? = nil) -> JSONValue {
        guard kind.isHTTP else { return response.body }
        var headers: [String: JSONValue] = ["content-type": "application/json", "cache-control": "no-store"]
        for (name, value) in response.headers { headers[name] = .string(value) }
        for (name, value) in cors?.responseHeaders(origin: origin) ?? [:] { headers[name] = .string(value) }
        return [
            "statusCode": .number(response.status),
            "headers": .object(headers),
            "body": .string(response.rawBody ?? response.body.serialized()),
            "isBase64Encoded": false,
        ]
    }
}
