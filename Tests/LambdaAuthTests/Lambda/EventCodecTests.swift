import LambdaAuth
import Testing

@Suite struct EventCodecTests {
    @Test func detectsHTTPAPIv2AndDecodesBase64Body() throws {
        let body = Base64.encoded(Array(#"{"provider":"google"}"#.utf8))
        let event = #"{"version":"2.0","requestContext":{"http":{"method":"post"}},"headers":{"Authorization":"Bearer x"},"body":"\#(body)","isBase64Encoded":true}"#
        let decoded = EventCodec.decode(Array(event.utf8))
        #expect(decoded.kind == .httpAPIv2)
        let request = try decoded.request.get()
        #expect(request.method == "POST")
        #expect(request.headers["authorization"] == "Bearer x")
        #expect(request.body["provider"] == "google")
    }

    @Test func detectsRESTv1() throws {
        let event = #"{"httpMethod":"DELETE","requestContext":{},"body":null}"#
        let decoded = EventCodec.decode(Array(event.utf8))
        #expect(decoded.kind == .restAPIv1)
        #expect(try decoded.request.get().method == "DELETE")
    }

    /// `well-known` routes on the path: `rawPath` (or `requestContext.http.path`) for payload 2.0,
    /// `path` for REST; a direct event has none.
    @Test func theHTTPPathIsKept() throws {
        let v2 = #"{"version":"2.0","rawPath":"/prod/.well-known/jwks.json","requestContext":{"http":{"method":"GET","path":"/x"}}}"#
        #expect(try EventCodec.decode(Array(v2.utf8)).request.get().path == "/prod/.well-known/jwks.json")
        let v2WithoutRawPath = #"{"version":"2.0","requestContext":{"http":{"method":"GET","path":"/.well-known/jwks.json"}}}"#
        #expect(try EventCodec.decode(Array(v2WithoutRawPath.utf8)).request.get().path == "/.well-known/jwks.json")
        let rest = #"{"httpMethod":"GET","path":"/.well-known/openid-configuration","requestContext":{}}"#
        #expect(try EventCodec.decode(Array(rest.utf8)).request.get().path == "/.well-known/openid-configuration")
        #expect(try EventCodec.decode(Array(#"{"document":"jwks"}"#.utf8)).request.get().path == "")
    }

    /// A response may replace the default headers (a cacheable document); the rest stay, and a
    /// direct invocation's answer is the body alone.
    @Test func responseHeadersJoinOrReplaceTheDefaults() {
        let response = InvocationResponse(body: ["keys": []], headers: ["cache-control": "public, max-age=300"])
        let http = EventCodec.encode(response, kind: .httpAPIv2)
        #expect(http["headers"] == ["content-type": "application/json", "cache-control": "public, max-age=300"])
        #expect(EventCodec.encode(InvocationResponse(body: [:]), kind: .restAPIv1)["headers"]?["cache-control"] == "no-store")
        #expect(EventCodec.encode(response, kind: .direct) == ["keys": []])
    }

    @Test func directEventIsItsOwnBody() throws {
        let decoded = EventCodec.decode(Array(#"{"refreshToken":"abc"}"#.utf8))
        #expect(decoded.kind == .direct)
        #expect(try decoded.request.get().body["refreshToken"] == "abc")
    }

    @Test(arguments: ["{not json", "[]", "42", #"{"version":"2.0","requestContext":{"http":{}},"body":"[1]"}"#,
                      #"{"httpMethod":"POST","requestContext":{},"body":"{","isBase64Encoded":false}"#,
                      #"{"httpMethod":"POST","requestContext":{},"body":"%%%","isBase64Encoded":true}"#])
    func refusesBadEvents(_ event: String) {
        guard case .failure(let error) = EventCodec.decode(Array(event.utf8)).request else {
            Issue.record("accepted \(event)")
            return
        }
        #expect(error.code == .invalidRequest)
    }

    @Test func refusesLargeBodiesBeforeParsing() {
        let big = "{\"x\":\"" + String(repeating: "a", count: 70_000) + "\"}"
        guard case .failure(let error) = EventCodec.decode(Array(big.utf8)).request else {
            Issue.record("accepted a 70 KB body")
            return
        }
        #expect(error.code == .invalidRequest)
    }

    @Test func encodesHTTPResponses() throws {
        let response = InvocationResponse(error: AuthError(.tokenExpired, "expired"))
        let document = EventCodec.encode(response, kind: .httpAPIv2)
        #expect(document["statusCode"] == .number(401))
        #expect(document["headers"]?["cache-control"] == "no-store")
        let body = try JSONValue.parse(document["body"]!.stringValue!)
        #expect(body["error"]?["code"] == "TOKEN_EXPIRED")
        #expect(body["error"]?["retryable"] == false)
        #expect(EventCodec.encode(response, kind: .direct)["error"]?["status"] == .number(401))
    }
}
