import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Testing

/// The console on either backend, as `authctl console` runs it on whichever store AUTH_STORE
/// names: it finds a user the handlers signed in and revokes its session through the operator
/// functions; the recent-events page reads the local change log, and says where to look on DynamoDB.
@Suite struct ConsoleStoreTests {
    static let token = "console-store-test-token-0123456789"

    @Test(arguments: FlowWorld.Backend.allCases)
    func theConsoleFindsAndActsOnEitherStore(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "console-store", email: "console-store@example.com"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let sessionID = try #require(signedIn["session"]?["id"]?.stringValue)

        let configuration = try AuthConfiguration.fromEnvironment(world.environment, forHandlers: false)
        let services = try AuthServices(configuration: configuration, logger: Logger.jsonLines(level: .error))
        let events: @Sendable () throws -> [JSONValue]?
        if case .local(let directory) = configuration.store {
            let table = LocalTable(directory: directory, clock: configuration.clock)
            events = { try table.changeRecords().compactMap { ItemEvents.event(for: $0, options: ItemEvents.Options(source: "test", includeEmail: false))?.json } }
        } else {
            events = { nil }
        }
        let console = ConsoleApp(administration: services.administration, token: ConsoleStoreTests.token, recentEvents: events,
                                 logger: Logger.jsonLines(level: .error))
        let listener = try ServeListener(host: "127.0.0.1", port: 0) { console.respond($0) ?? ServeListener.message(404, "Not Found") }
        defer { listener.stop(timeoutSeconds: 5) }
        let http = CurlHTTPClient()
        func send(_ method: String, _ target: String, body: String = "") throws -> HTTPResponse {
            try http.send(HTTPRequest(method: method, url: "http://127.0.0.1:\(listener.port)" + target, headers: [
                ("Cookie", "lambda_auth_console_\(listener.port)=\(ConsoleStoreTests.token)"),
                ("content-type", "application/x-www-form-urlencoded"),
            ], body: Array(body.utf8), timeout: 20))
        }

        let found = try send("GET", "/console?q=CONSOLE-STORE%40example.com")
        #expect(found.status == 200 && String(decoding: found.body, as: UTF8.self).contains(userID), "\(backend)")
        let listed = try send("GET", "/console")
        #expect(listed.status == 200 && String(decoding: listed.body, as: UTF8.self).contains(userID), "\(backend)")
        let revoked = try send("POST", "/console/user/revoke-session", body: "id=\(userID)&session=\(sessionID)")
        #expect(revoked.status == 303, "\(backend): \(String(decoding: revoked.body, as: UTF8.self))")
        let refresh = world.run("refresh", ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])])
        #expect(refresh.errorCode == "REFRESH_TOKEN_REVOKED", "\(backend): \(refresh.stdoutText)")

        let eventsPage = String(decoding: try send("GET", "/console/events").body, as: UTF8.self)
        switch backend {
        case .local: #expect(eventsPage.contains("session.ended") && eventsPage.contains(userID), "\(eventsPage.suffix(2000))")
        case .dynamoDB: #expect(eventsPage.contains("EventBridge"))
        }
    }
}
