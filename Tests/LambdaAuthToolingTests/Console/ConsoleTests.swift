import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Synchronization
import Testing

/// The console (contract section 23) over real HTTP in this process, beside serve's API as serve's
/// dev defaults host it: its token, its escaping, and its actions as the API then sees them.
@Suite final class ConsoleTests {
    let directory = TestSupport.temporaryDirectory("console")
    let identityProvider: DevIdentityProvider
    let api: LocalHTTPAPI
    let console: ConsoleApp
    let listener: ServeListener
    let http = CurlHTTPClient()
    let logLines = Collected<String>()
    static let token = "console-test-token-0123456789abcdef"

    init() throws {
        identityProvider = try DevIdentityProvider.initialize(directory: directory + "/dev").provider
        let environment = ServeTests.environment(directory, signingKeys: AccessTokenKey.generate(.rs256).pemRepresentation)
        api = try LocalHTTPAPI(environment: environment,
                               devIdentity: .init(provider: identityProvider, defaultAudiences: [.google: "web-client", .apple: "com.example.app"]),
                               loopbackCORS: true, logSink: { _ in })
        let logLines = self.logLines
        console = ConsoleApp(administration: api.administration, token: ConsoleTests.token, recentEvents: { nil },
                             logger: Logger.jsonLines(level: .info) { logLines.append($0) })
        let api = self.api, console = self.console
        listener = try ServeListener(host: "127.0.0.1", port: 0) { console.respond($0) ?? api.respond($0) }
    }

    deinit {
        listener.stop(timeoutSeconds: 5)
        TestSupport.removeTree(directory)
    }

    var cookie: (String, String) { ("Cookie", "lambda_auth_console_\(listener.port)=\(ConsoleTests.token)") }
    var ownOrigin: (String, String) { ("Origin", "http://127.0.0.1:\(listener.port)") }

    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil, json: JSONValue? = nil) throws -> HTTPResponse {
        var headers = headers.map { (name: $0.0, value: $0.1) }
        if body != nil { headers.append(("content-type", "application/x-www-form-urlencoded")) }
        if json != nil { headers.append(("content-type", "application/json")) }
        return try http.send(HTTPRequest(method: method, url: "http://127.0.0.1:\(listener.port)" + target, headers: headers,
                                         body: json?.serializedBytes() ?? Array((body ?? "").utf8), timeout: 20))
    }

    func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    func signIn(sub: String, name: String) throws -> JSONValue {
        let minted = try send("POST", "/dev/idp/google/token", json: ["sub": .string(sub), "email": .string("\(sub)@example.com"), "name": .string(name)])
        let idToken = try #require((try? JSONValue.parse(minted.body))?["idToken"]?.stringValue)
        let signedIn = try send("POST", "/auth/signin", json: ["provider": "google", "idToken": .string(idToken)])
        #expect(signedIn.status == 200, "\(text(signedIn))")
        return try JSONValue.parse(signedIn.body)
    }

    @Test func withoutItsTokenEveryPageIs401AndTheTokenBecomesACookie() throws {
        for target in ["/console", "/console/user?id=x", "/console/events", "/console/console.js", "/console?token=wrong"] {
            let refused = try send("GET", target)
            #expect(refused.status == 401, "\(target): \(refused.status)")
            #expect(!text(refused).contains(ConsoleTests.token))
        }
        let forged = try send("POST", "/console/user/delete", body: "id=x")
        #expect(forged.status == 401)
        let entry = try send("GET", "/console?token=\(ConsoleTests.token)")
        #expect(entry.status == 303 && entry.headers["location"] == "/console", "\(entry.headers)")
        let setCookie = entry.headers["set-cookie"] ?? ""
        #expect(setCookie.hasPrefix("lambda_auth_console_\(listener.port)=\(ConsoleTests.token);") && setCookie.contains("HttpOnly")
                && setCookie.contains("SameSite=Strict"), "\(setCookie)")
        let page = try send("GET", "/console", headers: [cookie])
        #expect(page.status == 200 && text(page).contains("<h1>Users</h1>"))
        #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
        // A DNS name pointed at 127.0.0.1 (rebinding) is not the console's host.
        let rebound = try send("GET", "/console", headers: [cookie, ("Host", "attacker.example")])
        #expect(rebound.status == 403)
    }

    @Test func everyValueIsEscapedAndActionsGoThroughTheOperatorFunctions() throws {
        let name = "<script>alert(1)</script>"
        let signedIn = try signIn(sub: "console-user", name: name)
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let sessionID = try #require(signedIn["session"]?["id"]?.stringValue)

        let found = try send("GET", "/console?q=console-user%40example.com", headers: [cookie])
        #expect(found.status == 200 && text(found).contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !text(found).contains(name), "\(text(found))")
        let page = try send("GET", "/console/user?id=\(userID)", headers: [cookie])
        #expect(page.status == 200 && text(page).contains(sessionID) && !text(page).contains(name))
        #expect(text(page).contains("User &lt;script&gt;alert(1)&lt;/script&gt;"))

        // A post from another origin changes nothing.
        let before = try #require(try api.administration.describeUser(userID))
        let crossSite = try send("POST", "/console/user/revoke-session", headers: [cookie, ("Origin", "http://localhost:9999")],
                                 body: "id=\(userID)&session=\(sessionID)")
        #expect(crossSite.status == 403)
        let badMetadata = try send("POST", "/console/user/metadata", headers: [cookie, ownOrigin], body: "id=\(userID)&metadata=%5B1%5D")
        #expect(badMetadata.status == 400 && text(badMetadata).contains("Refused: INVALID_REQUEST"), "\(text(badMetadata))")
        #expect(try api.administration.describeUser(userID) == before, "a refused action changed the user")

        let metadata = try send("POST", "/console/user/metadata", headers: [cookie, ownOrigin],
                                body: "id=\(userID)&metadata=%7B%22role%22%3A%22support%22%7D")
        #expect(metadata.status == 303 && metadata.headers["location"] == "/console/user?id=\(userID)&notice=metadata-saved")
        let revoked = try send("POST", "/console/user/revoke-session", headers: [cookie, ownOrigin], body: "id=\(userID)&session=\(sessionID)")
        #expect(revoked.status == 303 && revoked.headers["location"]?.hasSuffix("notice=session-revoked") == true)
        #expect(logLines.all.contains { $0.contains("session revoked by an operator") && $0.contains(sessionID) })
        let refresh = try send("POST", "/auth/refresh", json: ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])])
        #expect(refresh.status == 401 && text(refresh).contains("REFRESH_TOKEN_REVOKED"), "\(text(refresh))")
        let again = try signIn(sub: "console-user", name: name)
        #expect(again["user"]?["appMetadata"] == ["role": "support"])

        let noFactor = try send("POST", "/console/user/reset-mfa", headers: [cookie, ownOrigin], body: "id=\(userID)")
        #expect(noFactor.status == 303 && noFactor.headers["location"]?.hasSuffix("notice=no-mfa") == true)
        let deleted = try send("POST", "/console/user/delete", headers: [cookie, ownOrigin], body: "id=\(userID)")
        #expect(deleted.status == 303 && deleted.headers["location"] == "/console?notice=user-deleted")
        #expect(try api.administration.describeUser(userID) == nil)
        #expect(try send("GET", "/console/user?id=\(userID)", headers: [cookie]).status == 404)
    }

    /// Serve's dev defaults without AUTH_CORS_ORIGINS: any loopback http origin, nothing else.
    @Test func loopbackOriginsGetCORSOnTheDevDefaults() throws {
        for origin in ["http://localhost:5173", "http://127.0.0.1:3000", "http://localhost"] {
            let preflight = try send("OPTIONS", "/auth/signin", headers: [("Origin", origin), ("Access-Control-Request-Method", "POST"),
                                                                          ("Access-Control-Request-Headers", "content-type")])
            #expect(preflight.status == 204 && preflight.headers["access-control-allow-origin"] == origin, "\(origin): \(preflight.headers)")
            #expect(preflight.headers["access-control-allow-headers"] == "authorization,content-type")
            let answer = try send("POST", "/auth/refresh", headers: [("Origin", origin)], json: ["refreshToken": "x"])
            #expect(answer.status == 401 && answer.headers["access-control-allow-origin"] == origin && answer.headers["vary"] == "origin")
        }
        for origin in ["https://localhost:5173", "http://localhost.example.com:3000", "http://evil.example", "null", "http://10.0.2.2:8787"] {
            let preflight = try send("OPTIONS", "/auth/signin", headers: [("Origin", origin), ("Access-Control-Request-Method", "POST")])
            #expect(preflight.headers["access-control-allow-origin"] == nil, "\(origin)")
            let answer = try send("POST", "/auth/refresh", headers: [("Origin", origin)], json: ["refreshToken": "x"])
            #expect(answer.headers["access-control-allow-origin"] == nil, "\(origin)")
        }
    }

    /// With AUTH_CORS_ORIGINS set, its list alone, as the deployed handlers have it.
    @Test func aConfiguredListReplacesTheLoopbackRule() throws {
        let environment = ServeTests.environment(directory + "/strict", signingKeys: AccessTokenKey.generate(.rs256).pemRepresentation)
            .merging(["AUTH_CORS_ORIGINS": "https://app.example.com"]) { $1 }
        let strict = try LocalHTTPAPI(environment: environment, loopbackCORS: true, logSink: { _ in })
        let server = try ServeListener(host: "127.0.0.1", port: 0) { strict.respond($0) }
        defer { server.stop(timeoutSeconds: 5) }
        for (origin, allowed) in [("http://localhost:5173", false), ("https://app.example.com", true)] {
            let answer = try http.send(HTTPRequest(method: "OPTIONS", url: "http://127.0.0.1:\(server.port)/auth/signin",
                                                   headers: [("Origin", origin), ("Access-Control-Request-Method", "POST")], body: [], timeout: 20))
            #expect((answer.headers["access-control-allow-origin"] == origin) == allowed, "\(origin): \(answer.headers)")
        }
    }
}
