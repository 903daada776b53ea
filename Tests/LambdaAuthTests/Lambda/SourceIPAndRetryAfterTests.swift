import LambdaAuth
import Testing

/// The two pieces the rate limits need from the Lambda layer: the client's address on the request,
/// and `retry-after` on a RATE_LIMITED response.
@Suite struct SourceIPAndRetryAfterTests {
    @Test func theSourceIPComesFromEitherHTTPEventAndNeverFromADirectOne() throws {
        let v2 = #"{"version":"2.0","requestContext":{"http":{"method":"POST","sourceIp":"203.0.113.9"}},"body":"{}"}"#
        #expect(try EventCodec.decode(Array(v2.utf8)).request.get().sourceIP == "203.0.113.9")
        let v1 = #"{"httpMethod":"POST","requestContext":{"identity":{"sourceIp":"2001:db8::1"}},"body":"{}"}"#
        #expect(try EventCodec.decode(Array(v1.utf8)).request.get().sourceIP == "2001:db8::1")
        let direct = #"{"provider":"guest","requestContext":{"http":{"sourceIp":"203.0.113.9"}}}"#
        #expect(try EventCodec.decode(Array(direct.utf8)).request.get().sourceIP == nil, "a direct event's fields are request data")
        let missing = #"{"version":"2.0","requestContext":{"http":{"method":"POST"}},"body":"{}"}"#
        #expect(try EventCodec.decode(Array(missing.utf8)).request.get().sourceIP == nil)
    }

    @Test func aRateLimitedAnswerSaysWhenToComeBack() throws {
        var error = AuthError(.rateLimited, "too many requests")
        error.retryAfter = 1234
        let response = InvocationResponse(error: error)
        #expect(response.status == 429)
        #expect(response.body["error"]?["retryAfter"] == .number(1234))
        #expect(response.body["error"]?["retryable"] == true)

        let http = EventCodec.encode(response, kind: .httpAPIv2)
        #expect(http["headers"]?["retry-after"] == "1234")
        #expect(http["headers"]?["content-type"] == "application/json")
        #expect(http["headers"]?["cache-control"] == "no-store")
        #expect(EventCodec.encode(response, kind: .direct) == response.body)

        // Every other error is as it was: no retryAfter, no extra header.
        let other = InvocationResponse(error: AuthError(.invalidRequest, "bad"))
        #expect(other.body["error"]?["retryAfter"] == nil)
        #expect(EventCodec.encode(other, kind: .restAPIv1)["headers"]?.objectValue?.count == 2)
    }
}
