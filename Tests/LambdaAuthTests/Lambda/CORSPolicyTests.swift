import LambdaAuth
import Testing

/// AUTH_CORS_ORIGINS in the handlers' own HTTP answers (contract section 16).
@Suite struct CORSPolicyTests {
    func httpEvent(origin: String?) -> [UInt8] {
        var headers: [String: JSONValue] = ["content-type": "application/json"]
        if let origin { headers["origin"] = .string(origin) }
        return JSONValue.object([
            "version": "2.0", "rawPath": "/.well-known/openid-configuration", "headers": .object(headers),
            "requestContext": ["http": ["method": "GET", "path": "/.well-known/openid-configuration", "sourceIp": "127.0.0.1"]],
        ]).serializedBytes()
    }

    func answer(origin: String?, allowed: String?) -> JSONValue {
        var environment = ["AUTH_STORE": "/nonexistent-store-for-cors-tests"]
        environment["AUTH_CORS_ORIGINS"] = allowed
        return HandlerMain.invokeOnce(name: "well-known", environment: environment, event: httpEvent(origin: origin),
                                      factory: HandlerCatalogue.wellKnown.factory)
    }

    @Test func anAllowedOriginIsEchoedWithVaryAndAnyOtherGetsNoCORSHeader() {
        let allowed = answer(origin: "https://app.example.com", allowed: "http://localhost:3000, https://app.example.com")
        #expect(allowed["headers"]?["access-control-allow-origin"] == "https://app.example.com")
        #expect(allowed["headers"]?["vary"] == "origin")
        let stranger = answer(origin: "https://evil.example", allowed: "https://app.example.com")
        #expect(stranger["headers"]?["access-control-allow-origin"] == nil && stranger["headers"]?["vary"] == nil)
        #expect(answer(origin: "https://app.example.com", allowed: nil)["headers"]?["access-control-allow-origin"] == nil)
        #expect(answer(origin: nil, allowed: "https://app.example.com")["headers"]?["access-control-allow-origin"] == nil)
        #expect(answer(origin: "https://any.example", allowed: "*")["headers"]?["access-control-allow-origin"] == "https://any.example")
    }

    @Test func anEntryThatIsNotAnOriginIsAConfigErrorNamingTheVariable() throws {
        for value in ["https://app.example.com/", "app.example.com", "https://app.example.com/path", "ftp://files.example"] {
            #expect(throws: AuthError.self, "\(value)") { try CORSPolicy.fromEnvironment(["AUTH_CORS_ORIGINS": value]) }
            let response = answer(origin: "https://app.example.com", allowed: value)
            #expect(response["statusCode"] == 500, "\(value)")
            let body = (try? JSONValue.parse(Array((response["body"]?.stringValue ?? "").utf8)))
            #expect(body?["error"]?["code"] == "CONFIG_ERROR" && body?["error"]?["message"]?.stringValue?.contains("AUTH_CORS_ORIGINS") == true,
                    "\(value): \(String(describing: body))")
        }
        #expect(try CORSPolicy.fromEnvironment(["AUTH_CORS_ORIGINS": " "]) == nil)
    }

    /// Under `*` a deployed handler once echoed whatever `Origin` held: `null` (granting sandboxed
    /// and file: pages), a bare LF (a header split in front of a proxy), paths and credentials.
    @Test func underAnyOriginOnlyASerializedOriginIsReflected() {
        for origin in ["null", "https://app.example.com\nset-cookie: a=b", "https://app.example.com/", "https://user@app.example.com",
                       "HTTPS://APP.EXAMPLE.COM", "https://app.example.com:0", "https://app.example.com:65536", "javascript://x", ""] {
            #expect(answer(origin: origin, allowed: "*")["headers"]?["access-control-allow-origin"] == nil, "\(origin)")
            #expect(CORSPolicy(origins: ["*"]).preflightHeaders(origin: origin).isEmpty, "\(origin)")
        }
        for origin in ["http://localhost:3000", "https://app.example.com:8443", "http://127.0.0.1:8787", "http://[::1]:8787"] {
            #expect(answer(origin: origin, allowed: "*")["headers"]?["access-control-allow-origin"]?.stringValue == origin, "\(origin)")
        }
    }
}
