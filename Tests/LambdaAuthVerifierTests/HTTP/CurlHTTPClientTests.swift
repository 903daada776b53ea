import CCurl
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

    /// A refused option stops the request rather than sending one that lacks it; the message
    /// names the option.
    @Test func aRefusedOptionIsNotSentAndSaysWhich() throws {
        let library = try CurlLibrary.load().get()
        #expect(throws: Never.self) { try library.check(CURLE_OK, "CURLOPT_NOSIGNAL", url: "https://example.com") }
        do {
            try library.check(CURLE_UNKNOWN_OPTION, "CURLOPT_PROTOCOLS", url: "https://example.com")
            Issue.record("a refused option passed")
        } catch {
            guard case .libraryUnavailable(let reason)? = error as? HTTPClientError else { throw error }
            #expect(reason.contains("libcurl refused CURLOPT_PROTOCOLS (code 48"), "\(reason)")
        }
        let server = try LoopbackHTTPServer { _ in .init(text: "never") }
        defer { server.stop() }
        // libcurl takes no URL over 8 MB (CURL_MAX_INPUT_LENGTH).
        let huge = server.baseURL + "/" + String(repeating: "a", count: 8_000_001)
        #expect { try CurlHTTPClient().send(HTTPRequest(url: huge)) } throws: { error in
            guard case HTTPClientError.invalidURL = error else { return false }
            return true
        }
        #expect(server.requestCount == 0)
    }
}
