import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `authctl serve`'s HTTP API (contract section 16) over real HTTP on 127.0.0.1: the listener and
/// the gateway in this process, on a port the system picks, stopped by each test.
@Suite final class ServeTests {
    let directory = TestSupport.temporaryDirectory("serve")
    let identityProvider: DevIdentityProvider
    /// The access-token keys: RSA signs (as the template requires); a P-256 key is published too,
    /// which API Gateway's authorizer must still refuse.
    let signingKey = AccessTokenKey.generate(.rs256)
    let ellipticKey = AccessTokenKey.generate(.es256)
    let events = Collected<JSONValue>()
    /// What the server logs, kept from the test's output.
    let logLines = Collected<String>()
    let api: LocalHTTPAPI
    let listener: ServeListener
    let http = CurlHTTPClient()
    static let allowedOrigin = "http://localhost:3000"

    init() throws {
        identityProvider = try DevIdentityProvider.initialize(directory: directory + "/dev").provider
        let environment = Self.environment(directory, signingKeys: signingKey.pemRepresentation + "\n" + ellipticKey.pemRepresentation).merging([
            "AUTH_CORS_ORIGINS": ServeTests.allowedOrigin + ",https://app.example.com", "AUTH_GUEST": "on",
        ]) { $1 }
        let events = self.events, logLines = self.logLines
        api = try LocalHTTPAPI(environment: environment,
                               devIdentity: .init(provider: identityProvider, defaultAudiences: [.google: "web-client", .apple: "com.example.app"]),
                               eventObserver: { event in events.append(event) }, logSink: { line in logLines.append(line) })
        let api = self.api
        listener = try ServeListener(host: "127.0.0.1", port: 0) { api.respond($0) }
    }

    /// Serve on `directory` with the dev identity provider's keys (initialized in `directory/dev`)
    /// for Google and Apple, and `signingKeys` for access tokens.
    static func environment(_ directory: String, signingKeys: String) -> [String: String] {
        let jwks = "file://" + DevIdentityProvider.jwksPath(in: directory + "/dev")
        return ["AUTH_STORE": directory + "/store", "AUTH_CACHE_DIR": directory + "/cache",
                "AUTH_GOOGLE_AUDIENCES": "web-client", "AUTH_GOOGLE_JWKS_URL": jwks,
                "AUTH_APPLE_AUDIENCES": "com.example.app", "AUTH_APPLE_JWKS_URL": jwks,
                "AUTH_SIGNING_KEYS": signingKeys, "AUTH_CREDENTIALS_SECRET": "a-test-secret-of-enough-length", "AUTH_LOG_LEVEL": "error"]
    }

    deinit {
        listener.stop(timeoutSeconds: 5)
        TestSupport.removeTree(directory)
    }

    func send(_ method: String, _ target: String, json: JSONValue? = nil, headers: [(name: String, value: String)] = [],
              body: [UInt8]? = nil) throws -> HTTPResponse {
        var headers = headers
        if json != nil { headers.append(("content-type", "application/json")) }
        return try http.send(HTTPRequest(method: method, url: "http://127.0.0.1:\(listener.port)" + target, headers: headers,
                                         body: body ?? json?.serializedBytes() ?? [], timeout: 20))
    }

    func json(_ response: HTTPResponse) -> JSONValue? { try? JSONValue.parse(response.body) }

    func idToken(_ provider: String = "google", sub: String, extra: [String: JSONValue] = [:]) throws -> String {
        var request: [String: JSONValue] = ["sub": .string(sub), "email": .string("\(sub)@example.com")]
        for (name, value) in extra { request[name] = value }
        let response = try send("POST", "/dev/idp/\(provider)/token", json: .object(request))
        #expect(response.status == 200)
        return try #require(json(response)?["idToken"]?.stringValue)
    }

    func signIn(sub: String) throws -> JSONValue {
        let response = try send("POST", "/auth/signin", json: ["provider": "google", "idToken": .string(try idToken(sub: sub))])
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        return try #require(json(response))
    }

    /// An access token with exactly these claims, signed by `key` (the configured RSA key by default).
    func accessToken(_ claims: [String: JSONValue], key: AccessTokenKey? = nil) throws -> String {
        let key = key ?? signingKey
        return try JWSSigner.sign(header: ["typ": "JWT"], payload: claims, keyID: key.keyID, key: key.signingKey)
    }

    func validClaims(now: Int64 = SystemClock().nowSeconds) -> [String: JSONValue] {
        ["iss": "lambda-auth", "aud": "lambda-auth", "sub": "user", "sid": "session", "jti": "token", "iat": .number(now - 10),
         "exp": .number(now + 600)]
    }

    @Test func signInRefreshSessionsAndSignOutOverHTTPWithTheDevIdentityProvider() throws {
        let signedIn = try signIn(sub: "ada")
        #expect(signedIn["isNewUser"] == true)
        let refreshed = try send("POST", "/auth/refresh", json: ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])])
        #expect(refreshed.status == 200)
        let tokens = try #require(json(refreshed)?["tokens"])
        let accessToken = try #require(tokens["accessToken"]?.stringValue)
        let sessions = try send("GET", "/auth/sessions", headers: [("Authorization", "Bearer " + accessToken)])
        #expect(sessions.status == 200)
        #expect(json(sessions)?["sessions"]?.arrayValue?.count == 1)
        #expect(json(sessions)?["sessions"]?.arrayValue?.first?["id"] == signedIn["session"]?["id"])
        let signedOut = try send("POST", "/auth/signout", json: ["refreshToken": try #require(tokens["refreshToken"])])
        #expect(signedOut.status == 200 && json(signedOut) == ["revokedSessions": 1])
        // The session is gone for the handler's caller check, though the token still passes the authorizer.
        let after = try send("GET", "/auth/sessions", headers: [("authorization", "Bearer " + accessToken)])
        #expect(after.status == 401 && json(after)?["error"]?["code"] == "ACCESS_TOKEN_REVOKED")
        // Apple's dev tokens sign in too.
        let apple = try send("POST", "/auth/signin", json: ["provider": "apple", "idToken": .string(try idToken("apple", sub: "001.apple"))])
        #expect(apple.status == 200)
        // One event line per request (8 of them), each with the request id its event carried.
        let eventLines = logLines.all.compactMap { try? JSONValue.parse(Array($0.utf8)) }.filter { $0["event"] != nil }
        #expect(eventLines.compactMap { $0["event"]?.stringValue }
                == ["dev_idp_token", "signin", "refresh", "sessions", "signout", "sessions_failed", "dev_idp_token", "signin"])
        let handlerRequestIDs = events.all.compactMap { $0["requestContext"]?["requestId"]?.stringValue }
        #expect(handlerRequestIDs.count == 6 && handlerRequestIDs.allSatisfy { id in eventLines.contains { $0["requestId"]?.stringValue == id } })
    }

    @Test func unroutedRequestsAnswerAPIGatewaysNotFound() throws {
        for (method, target) in [("GET", "/nowhere"), ("PUT", "/auth/signin"), ("GET", "/auth/signin"), ("POST", "/dev/idp/okta/token")] {
            let response = try send(method, target)
            #expect(response.status == 404, "\(method) \(target)")
            #expect(String(decoding: response.body, as: UTF8.self) == #"{"message":"Not Found"}"#, "\(method) \(target)")
        }
    }

    /// Section 13's rules, as API Gateway's authorizer applies them, without clock skew.
    @Test func guardedRoutesRefuseWhatTheAuthorizerRefuses() throws {
        let now = SystemClock().nowSeconds
        var refused: [String: [(name: String, value: String)]] = [
            "no header": [],
            "not a JWT": [("authorization", "Bearer not-a-token")],
            "an ID token of the dev provider": [("authorization", "Bearer " + (try idToken(sub: "x")))],
        ]
        func with(_ change: (inout [String: JSONValue]) -> Void) -> [String: JSONValue] {
            var claims = validClaims(now: now)
            change(&claims)
            return claims
        }
        let cases: [String: [String: JSONValue]] = [
            "expired a second ago": with { $0["exp"] = .number(now - 1) },
            "issued in the future": with { $0["iat"] = .number(now + 30) },
            "not valid before later": with { $0["nbf"] = .number(now + 30) },
            "another issuer": with { $0["iss"] = "someone-else" },
            "another audience": with { $0["aud"] = "someone-else" },
            "no expiry": with { $0["exp"] = nil },
        ]
        for (name, claims) in cases { refused[name] = [("authorization", "Bearer " + (try accessToken(claims)))] }
        refused["an ES256 key of the set (RSA only)"] = [("authorization", "Bearer " + (try accessToken(validClaims(), key: ellipticKey)))]
        refused["a key not in the set"] = [("authorization", "Bearer " + (try accessToken(validClaims(), key: AccessTokenKey.generate(.rs256))))]
        for (name, headers) in refused {
            let response = try send("GET", "/auth/sessions", headers: headers)
            #expect(response.status == 401, "\(name)")
            #expect(String(decoding: response.body, as: UTF8.self) == #"{"message":"Unauthorized"}"#, "\(name)")
        }
        #expect(events.all.isEmpty, "a refused request reached a handler")
        // Passed by the authorizer (client_id stands for a missing aud; no session check there), so
        // the handler answers, in its own shape.
        var clientID = validClaims(now: now)
        clientID["aud"] = nil
        clientID["client_id"] = "lambda-auth"
        let passed = try send("GET", "/auth/sessions", headers: [("authorization", "Bearer " + (try accessToken(clientID)))])
        #expect(passed.status == 401 && json(passed)?["error"]?["code"] == "ACCESS_TOKEN_INVALID")
        #expect(events.all.count == 1)
    }

    @Test func theEventIsAPIGatewaysWithEveryClaimAsAString() throws {
        var claims = validClaims()
        claims["aud"] = ["lambda-auth", "another-api"]
        claims["app_metadata"] = ["roles": ["admin"]]
        claims["is_anonymous"] = true
        let token = try accessToken(claims)
        let response = try send("GET", "/auth/sessions?b=2&a=x%20y&a=3", headers: [
            ("Authorization", "Bearer " + token), ("Cookie", "theme=dark; lang=en"), ("X-Custom", "one"), ("x-custom", "two"),
            ("User-Agent", "serve-tests"),
        ])
        #expect(response.status == 401, "the handler's own check: no such session")
        let event = try #require(events.all.last)
        #expect(event["version"] == "2.0" && event["routeKey"] == "GET /auth/sessions")
        #expect(event["rawPath"] == "/auth/sessions" && event["rawQueryString"] == "b=2&a=x%20y&a=3")
        #expect(event["queryStringParameters"] == ["a": "x y,3", "b": "2"])
        #expect(event["cookies"] == ["theme=dark", "lang=en"])
        #expect(event["headers"]?["x-custom"] == "one,two" && event["headers"]?["cookie"] == nil)
        #expect(event["headers"]?["authorization"] == .string("Bearer " + token))
        #expect(event["isBase64Encoded"] == false && event["body"] == nil)
        let context = try #require(event["requestContext"])
        #expect(context["http"]?["method"] == "GET" && context["http"]?["path"] == "/auth/sessions")
        #expect(context["http"]?["sourceIp"] == "127.0.0.1" && context["http"]?["userAgent"] == "serve-tests")
        #expect(context["http"]?["protocol"] == "HTTP/1.1" && context["stage"] == "$default")
        #expect(context["requestId"]?.stringValue?.isEmpty == false)
        let passed = try #require(context["authorizer"]?["jwt"])
        #expect(passed["scopes"] == .null)
        let strings = try #require(passed["claims"]?.objectValue)
        #expect(strings.values.allSatisfy { $0.stringValue != nil }, "\(strings)")
        #expect(strings["aud"] == #"["lambda-auth","another-api"]"#)
        #expect(strings["app_metadata"] == #"{"roles":["admin"]}"#)
        #expect(strings["is_anonymous"] == "true" && strings["exp"] == .string(String(claims["exp"]!.int64Value!)))
        #expect(strings["sub"] == "user")
        // Unguarded routes carry no authorizer; each request has its own id.
        _ = try send("POST", "/auth/refresh", json: ["refreshToken": "x"])
        let unguarded = try #require(events.all.last)
        #expect(unguarded["requestContext"]?["authorizer"] == nil)
        #expect(unguarded["requestContext"]?["requestId"] != context["requestId"])
    }

    @Test func aBodyThatIsNotUTF8ReachesTheHandlerInBase64() throws {
        let bytes: [UInt8] = [0xFF, 0xFE, 0x00, 0x7B]
        let response = try send("POST", "/auth/signin", headers: [("content-type", "application/octet-stream")], body: bytes)
        #expect(response.status == 400 && json(response)?["error"]?["code"] == "INVALID_REQUEST")
        let event = try #require(events.all.last)
        #expect(event["isBase64Encoded"] == true && event["body"] == .string(Base64.encoded(bytes)))
        _ = try send("POST", "/auth/refresh", json: ["refreshToken": "é"])
        #expect(events.all.last?["isBase64Encoded"] == false)
        // A handler's base64 answer goes out decoded, with its status and headers.
        let answer = LocalHTTPAPI.httpResponse(["statusCode": 201, "headers": ["x-one": "1"], "body": .string(Base64.encoded(bytes)),
                                                "isBase64Encoded": true])
        #expect(answer.status == 201 && answer.body == bytes && answer.headers.contains { $0 == ("x-one", "1") })
    }

    /// Thread per connection: a request still arriving does not hold up another one.
    @Test func requestsAreServedConcurrently() throws {
        let slow = try RawConnection(port: listener.port)
        let body = Array(#"{"sub":"slow-one"}"#.utf8)
        try slow.send("POST /dev/idp/google/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: \(body.count)\r\n\r\n" + String(decoding: body.prefix(5), as: UTF8.self))
        let results = Collected<Int>()
        let port = listener.port
        for index in 0..<8 {
            BackgroundThread.detach {
                let client = CurlHTTPClient()
                let status = (try? client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/auth/signin",
                                                           body: Array(#"{"provider":"guest"}"#.utf8), timeout: 30)))?.status ?? -index
                results.append(status)
            }
        }
        let deadline = monotonicSeconds() + 60
        while results.all.count < 8, monotonicSeconds() < deadline { usleep(20_000) }
        #expect(results.all == Array(repeating: 200, count: 8), "guests are limited to 30 an hour per IP: 8 fit")
        #expect(listener.requestsInFlight == 1, "the slow request is still being read")
        try slow.send(String(decoding: body.dropFirst(5), as: UTF8.self))
        let answer = try slow.readResponse()
        #expect(answer.status == 200 && answer.body.contains("idToken"))
    }

    @Test func corsAnswersAllowedOriginsOnly() throws {
        let preflight = try send("OPTIONS", "/auth/signin", headers: [
            ("Origin", ServeTests.allowedOrigin), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type"),
        ])
        #expect(preflight.status == 204 && preflight.body.isEmpty)
        #expect(preflight.headers["access-control-allow-origin"] == ServeTests.allowedOrigin)
        #expect(preflight.headers["access-control-allow-methods"] == "GET,POST,DELETE,OPTIONS")
        #expect(preflight.headers["access-control-allow-headers"] == "authorization,content-type")
        #expect(preflight.headers["access-control-max-age"] == "600" && preflight.headers["vary"] == "origin")
        let stranger = try send("OPTIONS", "/auth/signin", headers: [("Origin", "https://evil.example"), ("Access-Control-Request-Method", "POST")])
        #expect(stranger.status == 204 && stranger.headers["access-control-allow-origin"] == nil)
        #expect(stranger.headers["access-control-allow-methods"] == nil)
        // Simple requests: the handler's answer (EventCodec) and serve's own.
        let allowed = try send("POST", "/auth/refresh", json: ["refreshToken": "x"], headers: [("Origin", "https://app.example.com")])
        #expect(allowed.status == 401 && allowed.headers["access-control-allow-origin"] == "https://app.example.com")
        #expect(allowed.headers["vary"] == "origin")
        let refused = try send("POST", "/auth/refresh", json: ["refreshToken": "x"], headers: [("Origin", "https://evil.example")])
        #expect(refused.status == 401 && refused.headers["access-control-allow-origin"] == nil)
        let unauthorized = try send("GET", "/auth/sessions", headers: [("Origin", ServeTests.allowedOrigin)])
        #expect(unauthorized.status == 401 && unauthorized.headers["access-control-allow-origin"] == ServeTests.allowedOrigin)
    }

    @Test func theOpenAPIDocumentIsTheCommittedOneAndCoversEveryRoute() throws {
        let served = try send("GET", "/openapi.json")
        #expect(served.status == 200 && served.headers["content-type"] == "application/json")
        let committed = try FileSystem.readFile(TestSupport.packageRoot + "/Infra/openapi.json")
        let identical = served.body == committed
        #expect(identical, "Infra/openapi.json is stale: run `authctl openapi > Infra/openapi.json`")
        let document = try JSONValue.parse(served.body)
        #expect(document["openapi"] == "3.1.0")
        for entry in HandlerCatalogue.all {
            for route in entry.routes {
                let operation = try #require(document["paths"]?[route.path]?[route.method.lowercased()], "\(route)")
                #expect((operation["security"] != nil) == route.guarded, "\(route)")
                // A route without its own entry in OpenAPIDocument.operations gets a placeholder summary.
                #expect(operation["summary"] != .string("\(route.method) \(route.path)"), "\(route) has no request and response schemas")
                #expect(operation["responses"]?["500"]?["content"]?["application/json"]?["schema"] != nil, "\(route): the error body")
            }
        }
        #expect(document["paths"]?.objectValue?.keys.contains { $0.hasPrefix("/dev/") } == false, "the dev routes are serve's alone")
        #expect(document["components"]?["securitySchemes"]?["accessToken"]?["scheme"] == "bearer")
    }

    /// schemathesis (PyPI) fuzzes every operation of the document against this server, bounded
    /// in examples and time: no 5xx, every status, body and content type as documented. The same
    /// run against a copy that leaves out signin's 400 must fail, so the check can fail.
    @Test func schemathesisFindsOnlyDocumentedAnswers() throws {
        let accessToken = try #require(try signIn(sub: "schemathesis")["tokens"]?["accessToken"]?.stringValue)
        func fuzz(_ document: String, seconds: Int, extra: [String] = []) throws -> ProcessRunner.Output {
            // From the test's directory: schemathesis keeps its state files in the working directory.
            let script = #"cd "$1" && shift && exec python3 -m schemathesis.cli run "$@""#
            return try ProcessRunner.run("/bin/sh", arguments: ["-c", script, "sh", directory, document,
                                                               "--url", "http://127.0.0.1:\(listener.port)", "--max-examples", "10",
                                                               "--max-time", String(seconds), "--phases", "coverage,fuzzing",
                                                               "--no-color", "-H", "Authorization: Bearer " + accessToken, "--checks",
                                                               "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance"]
                                                               + extra, environment: Environment.current())
        }
        let run = try fuzz(TestSupport.packageRoot + "/Infra/openapi.json", seconds: 20)
        #expect(run.exitCode == 0, "\(run.stdoutText.suffix(4000)) \(run.stderrText.suffix(1000))")
        let operations = (OpenAPIDocument.document["paths"]?.objectValue ?? [:]).values.reduce(0) { $0 + ($1.objectValue?.count ?? 0) }
        #expect(run.stdoutText.contains("\(operations)/\(operations)"), "every operation: \(run.stdoutText.suffix(1500))")
        guard case .object(var document) = OpenAPIDocument.document, case .object(var paths)? = document["paths"],
              case .object(var signin)? = paths["/auth/signin"], case .object(var post)? = signin["post"],
              case .object(var responses)? = post["responses"] else { Issue.record("the document's shape changed"); return }
        responses["400"] = nil
        post["responses"] = .object(responses)
        signin["post"] = .object(post)
        paths = ["/auth/signin": .object(signin)]
        document["paths"] = .object(paths)
        let stale = directory + "/without-400.json"
        try FileSystem.writeAtomically(stale, JSONValue.object(document).serializedBytes())
        let caught = try fuzz(stale, seconds: 10)
        #expect(caught.exitCode != 0 && caught.stdoutText.contains("400"), "\(caught.stdoutText.suffix(2000))")
    }

    /// schemathesis's stateful phase: sequences of calls that hand one answer's refresh token to
    /// the next call (sign-in → refresh → refresh → sign-out), checked as the stateless phases
    /// are. The committed document has no OpenAPI links, so the test runs on a copy that adds
    /// them, and an example guest sign-in (on here) so that a sequence can start with a 200;
    /// every schema stays the committed one. Bounded: 5 examples, 12 s.
    @Test func schemathesisStatefulPhaseFollowsTheRefreshTokenAcrossCalls() throws {
        let accessToken = try #require(try signIn(sub: "schemathesis-stateful")["tokens"]?["accessToken"]?.stringValue)
        guard case .object(var document) = OpenAPIDocument.document, case .object(var paths)? = document["paths"] else {
            Issue.record("the document's shape changed")
            return
        }
        func link(_ path: String) -> JSONValue {
            ["operationRef": .string("#/paths/~1" + path.dropFirst().split(separator: "/").joined(separator: "~1") + "/post"),
             "requestBody": ["refreshToken": "$response.body#/tokens/refreshToken"]]
        }
        for path in ["/auth/signin", "/auth/refresh"] {
            guard case .object(var item)? = paths[path], case .object(var post)? = item["post"], case .object(var responses)? = post["responses"],
                  case .object(var ok)? = responses["200"] else {
                Issue.record("\(path) has no 200")
                return
            }
            ok["links"] = ["Refresh": link("/auth/refresh"), "SignOut": link("/auth/signout")]
            responses["200"] = .object(ok)
            post["responses"] = .object(responses)
            if path == "/auth/signin", case .object(var body)? = post["requestBody"], case .object(var content)? = body["content"],
               case .object(var media)? = content["application/json"] {
                media["examples"] = ["guest": ["value": ["provider": "guest"]]]
                content["application/json"] = .object(media)
                body["content"] = .object(content)
                post["requestBody"] = .object(body)
            }
            item["post"] = .object(post)
            paths[path] = .object(item)
        }
        document["paths"] = .object(paths)
        let linked = directory + "/linked.json"
        try FileSystem.writeAtomically(linked, JSONValue.object(document).serializedBytes())
        let script = #"cd "$1" && shift && exec python3 -m schemathesis.cli run "$@""#
        let run = try ProcessRunner.run("/bin/sh", arguments: ["-c", script, "sh", directory, linked,
                                                              "--url", "http://127.0.0.1:\(listener.port)", "--max-examples", "5",
                                                              "--max-time", "12", "--phases", "stateful", "--no-color",
                                                              // The linked operations alone: the others have no link to follow,
                                                              // and fuzzing them spent the budget on a loaded machine.
                                                              "--include-path-regex", "^/auth/(signin|refresh|signout)$",
                                                              "-H", "Authorization: Bearer " + accessToken, "--checks",
                                                              "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance"],
                                        environment: Environment.current())
        #expect(run.exitCode == 0, "\(run.stdoutText.suffix(4000)) \(run.stderrText.suffix(1000))")
        // The links were followed, not merely declared: schemathesis reports "API Links: N covered / M selected".
        let covered = run.stdoutText.split(separator: "\n").first { $0.contains("API Links:") }
            .flatMap { line in line.split(separator: ":").last?.split(separator: " ").first.flatMap { Int($0) } }
        #expect((covered ?? 0) >= 4, "links covered: \(run.stdoutText.suffix(1500))")
        // Refreshes chained from earlier answers reached the handler (a fuzzed token alone never refreshes).
        #expect(events.all.contains { $0["rawPath"] == "/auth/refresh" } && logLines.all.contains { $0.contains(#""event":"refresh""#) },
                "no refresh succeeded")
    }

    /// openapi-spec-validator (PyPI) accepts the committed document and refuses a broken copy,
    /// so its verdict can fail.
    @Test func openAPISpecValidatorAcceptsTheDocument() throws {
        let verdict = try TestSupport.pythonPeer("openapi_validate.py", [TestSupport.packageRoot + "/Infra/openapi.json"])
        #expect(verdict == ["valid": true], "\(verdict)")
        guard case .object(var broken) = OpenAPIDocument.document else { Issue.record("not an object"); return }
        broken["paths"] = ["/auth/signin": ["post": ["responses": ["200": ["$ref": "#/components/responses/Missing"]]]]]
        let copy = directory + "/broken-openapi.json"
        try FileSystem.writeAtomically(copy, JSONValue.object(broken).serializedBytes())
        let refused = try TestSupport.pythonPeer("openapi_validate.py", [copy])
        #expect(refused["valid"] == false, "\(refused)")
    }
}

extension ServeTests {
    /// One request's bytes as given, on a connection of its own, and the status answered.
    func raw(_ text: String) throws -> (status: Int, body: String) {
        let connection = try RawConnection(port: listener.port)
        try connection.send(text)
        return try connection.readResponse()
    }

    /// Each is read one way by serve and another by some proxy in front of it (RFC 9112 sections
    /// 5 and 6.3): refused with the contract's error body, never guessed at.
    @Test func requestSmugglingPrimitivesAre400() throws {
        let host = "host: 127.0.0.1\r\n"
        let cases = [
            "POST /auth/refresh HTTP/1.1\r\n\(host)content-length: 2\r\ncontent-length: 40\r\n\r\n{}",
            "POST /auth/refresh HTTP/1.1\r\n\(host)content-length: 2, 40\r\n\r\n{}",
            "POST /auth/refresh HTTP/1.1\r\n\(host)content-length : 2\r\n\r\n{}",
            "POST /auth/refresh HTTP/1.1\r\n\(host)content-length: +2\r\n\r\n{}",
            "POST /auth/refresh HTTP/1.1\r\n\(host)content-length: 2\nx: y\r\n\r\n{}",
            "POST /auth/refresh HTTP/1.1\r\n\(host)x: y\r\n continued\r\ncontent-length: 2\r\n\r\n{}",
            "POST /auth/refresh HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}",
            "POST /auth/refresh HTTP/1.1\r\n\(host)\(host)content-length: 2\r\n\r\n{}",
            "POST  /auth/refresh HTTP/1.1\r\n\(host)content-length: 2\r\n\r\n{}",
        ]
        for request in cases {
            let answer = try raw(request)
            #expect(answer.status == 400 && answer.body.contains(#""code":"INVALID_REQUEST""#), "\(request.debugDescription): \(answer)")
        }
        #expect(try raw("POST /auth/refresh HTTP/1.1\r\n\(host)transfer-encoding : chunked\r\n\r\n0\r\n\r\n").status == 400)
        // Repeated and equal is one length (section 6.3 allows it).
        #expect(try raw("POST /nowhere HTTP/1.1\r\n\(host)content-length: 2\r\ncontent-length: 2\r\n\r\n{}").status == 404)
    }

    /// 431 whether the oversized head comes in one write, or a byte short of the limit and then the rest.
    @Test func aHeadOver64KiBIs431HoweverItArrives() throws {
        let filler = "x-filler: " + String(repeating: "a", count: 70 << 10) + "\r\n"
        #expect(try raw("GET /openapi.json HTTP/1.1\r\nhost: 127.0.0.1\r\n" + filler + "\r\n").status == 431)
        let connection = try RawConnection(port: listener.port)
        let head = "GET /openapi.json HTTP/1.1\r\nhost: 127.0.0.1\r\n" + filler
        try connection.send(String(head.prefix(60 << 10)))
        usleep(100_000)
        try connection.send(String(head.dropFirst(60 << 10)) + "\r\n")
        #expect(try connection.readResponse().status == 431)
    }

    /// DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends `Host: evil.example`.
    @Test func aHostThatIsAnotherDNSNameIsRefused() throws {
        let port = listener.port
        for host in ["evil.example:\(port)", "localhost.evil.example", "evil.example", "127.0.0.1.evil.example:\(port)"] {
            let answer = try raw("GET /openapi.json HTTP/1.1\r\nhost: \(host)\r\n\r\n")
            #expect(answer.status == 403 && answer.body.contains(#""code":"INVALID_REQUEST""#), "\(host): \(answer)")
        }
        for host in ["localhost:\(port)", "LOCALHOST", "127.0.0.1:\(port)", "10.0.2.2:8787", "[::1]:\(port)", "192.168.1.20"] {
            #expect(try raw("GET /openapi.json HTTP/1.1\r\nhost: \(host)\r\nconnection: close\r\n\r\n").status == 200, "\(host)")
        }
        #expect(LocalHTTPAPI.acceptsHost("dev.example.test:8787", names: ["dev.example.test"]))
        #expect(!LocalHTTPAPI.acceptsHost("dev.example.test:80x", names: ["dev.example.test"]))
    }

    /// The authorizer would check one and the handler see both, joined.
    @Test func twoAuthorizationHeadersAreRefused() throws {
        let accessToken = try #require(signIn(sub: "two-headers")["tokens"]?["accessToken"]?.stringValue)
        let answer = try send("GET", "/auth/sessions", headers: [("authorization", "Bearer " + accessToken), ("authorization", "Bearer x")])
        #expect(answer.status == 400 && json(answer)?["error"]?["code"] == "INVALID_REQUEST", "\(answer.status)")
        #expect(try send("GET", "/auth/sessions", headers: [("authorization", "Bearer " + accessToken)]).status == 200)
    }

    /// Idle, slow-head and slow-body clients are closed after their limit, so that they free
    /// their place under the connection cap and a real client is answered.
    @Test func idleAndSlowClientsAreClosedAndFreeTheirPlace() throws {
        var limits = ServeListener.Limits()
        limits.idleSeconds = 0.5
        limits.headSeconds = 0.5
        limits.bodySeconds = 0.5
        limits.maximumConnections = 3
        let small = try ServeListener(host: "127.0.0.1", port: 0, limits: limits) { _ in ServeListener.message(200, "ok") }
        defer { small.stop(timeoutSeconds: 5) }
        let started = monotonicSeconds()
        let idle = try RawConnection(port: small.port)
        let slowHead = try RawConnection(port: small.port)
        try slowHead.send("GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        let slowBody = try RawConnection(port: small.port)
        try slowBody.send("POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 10\r\n\r\n{}")
        // Past the cap: waits in the backlog until one of the three is closed.
        let waiting = try RawConnection(port: small.port)
        try waiting.send("GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        #expect(try waiting.readResponse().status == 200)
        for connection in [idle, slowHead, slowBody] { #expect(try connection.readResponse().status == 0) }
        #expect(monotonicSeconds() - started < 10, "the limits did not close the slow clients")
    }
}

/// What threads of a test hand back.
final class Collected<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])

    func append(_ element: Element) { elements.withLock { $0.append(element) } }
    var all: [Element] { elements.withLock { $0 } }
}

/// A client socket that sends what the test says, when it says.
final class RawConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let descriptor: Int32

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw RawConnection.Failure(description: "cannot connect to 127.0.0.1:\(port): errno \(errno)")
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw RawConnection.Failure(description: "send failed: errno \(errno)") }
    }

    /// Reads until the server closes or the declared body is complete; status 0 when it closed
    /// without answering.
    func readResponse() throws -> (status: Int, body: String) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let headEnd = text.firstRange(of: "\r\n\r\n") {
                let head = text[..<headEnd.lowerBound].lowercased()
                if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                   let length = Int(line.dropFirst("content-length:".count).trimmingPrefix(" ")),
                   text[headEnd.upperBound...].utf8.count >= length {
                    break
                }
            }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += chunk[0..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        // Closed without an answer.
        if received.isEmpty { return (0, "") }
        guard let statusText = text.split(separator: " ").dropFirst().first, let status = Int(statusText),
              let headEnd = text.firstRange(of: "\r\n\r\n") else {
            throw RawConnection.Failure(description: "no HTTP response: \(text)")
        }
        return (status, String(text[headEnd.upperBound...]))
    }
}
