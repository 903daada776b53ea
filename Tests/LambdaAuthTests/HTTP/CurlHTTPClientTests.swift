import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

@Suite struct CurlHTTPClientTests {
    @Test func sendsAndReceives() throws {
        let server = try LoopbackHTTPServer { request in
            .init(status: 201, headers: [("X-Echo", request.headers["x-test"] ?? "")], text: request.method + " " + request.bodyText)
        }
        defer { server.stop() }
        let client = CurlHTTPClient()
        let response = try client.send(HTTPRequest(method: "POST", url: server.baseURL + "/a?b=c",
                                                   headers: [("X-Test", "yes")], body: Array("hello".utf8)))
        #expect(response.status == 201)
        #expect(response.headers["x-echo"] == "yes")
        #expect(String(decoding: response.body, as: UTF8.self) == "POST hello")
        #expect(server.requests.first?.target == "/a?b=c")
        // The handle is reused: a second request goes through the same client.
        #expect(try client.send(HTTPRequest(url: server.baseURL + "/")).status == 201)
    }

    @Test func refusesOversizedResponses() throws {
        let server = try LoopbackHTTPServer { _ in .init(body: [UInt8](repeating: 65, count: 5000)) }
        defer { server.stop() }
        #expect(throws: HTTPClientError.self) {
            try CurlHTTPClient().send(HTTPRequest(url: server.baseURL, maximumResponseBytes: 1000))
        }
    }

    @Test func doesNotFollowRedirects() throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/moved" ? .init(status: 302, headers: [("Location", "/target")], text: "") : .init(text: "target")
        }
        defer { server.stop() }
        #expect(try CurlHTTPClient().send(HTTPRequest(url: server.baseURL + "/moved")).status == 302)
        #expect(server.requestCount == 1)
    }

    @Test func timesOut() throws {
        let server = try LoopbackHTTPServer { _ in .init(text: "late") }
        server.respond { _ in LoopbackHTTPServer.Response(body: [], delaySeconds: 2) }
        defer { server.stop() }
        let started = monotonicSeconds()
        #expect(throws: HTTPClientError.self) {
            try CurlHTTPClient().send(HTTPRequest(url: server.baseURL, timeout: 0.3))
        }
        #expect(monotonicSeconds() - started < 1.5)
    }

    @Test func reportsConnectionFailures() throws {
        let server = try LoopbackHTTPServer { _ in .drop }
        defer { server.stop() }
        #expect(throws: HTTPClientError.self) { try CurlHTTPClient().send(HTTPRequest(url: server.baseURL)) }
    }
}
