import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real `authctl serve` process on a free loopback port, driven by Python clients over real
/// HTTP (Tests/Scripts/serve_e2e.py, serve_load.py): an app's whole journey on the dev store and
/// on DynamoDB (moto), and 16 concurrent clients for 10 seconds.
///
/// On moto, serve runs in configured mode on the production store configuration
/// (`productionEnvironment`: DynamoDB, STS credentials, a configured signing key) with the demo
/// audiences and the dev identity provider's JWKS: the dev provider is never on real data, so the
/// client mints its ID tokens from a second serve in dev mode, as an app developer's test rig would.
@Suite final class ServeEndToEndTests {
    let directory = TestSupport.temporaryDirectory("serve-e2e")
    static let document = TestSupport.packageRoot + "/Infra/openapi.json"

    deinit { TestSupport.removeTree(directory) }

    /// Serve with its stderr (one line per request) going to a file: an unread pipe would fill
    /// under load and stall the server.
    func startServe(environment: [String: String], devDirectory: String? = nil) throws -> (process: RunningProcess, port: UInt16, log: String) {
        let port = try ServeProcessTests.freePort()
        let log = directory + "/serve-\(port).log"
        let script = #"exec "$1" serve --port "$2" --dev-dir "$3" 2>"$4""#
        let process = try ProcessRunner.start("/bin/sh", arguments: ["-c", script, "sh", ProcessRunner.executable("authctl"), String(port),
                                                                    devDirectory ?? directory + "/dev", log], environment: environment)
        let deadline = monotonicSeconds() + 30
        while (try? RawConnection(port: port)) == nil {
            guard monotonicSeconds() < deadline else {
                process.kill()
                let said = String(decoding: (try? FileSystem.readFile(log)) ?? [], as: UTF8.self)
                throw RawConnection.Failure(description: "authctl serve did not listen on \(port) within 30 s: \(process.finish().stdoutText) \(said.suffix(2000))")
            }
            usleep(50_000)
        }
        return (process, port, log)
    }

    /// Stops serve as Ctrl-C would and checks it exited cleanly.
    func stop(_ process: RunningProcess) {
        process.kill(SIGTERM)
        let exit = process.finish()
        #expect(exit.exitCode == 0 && exit.signal == nil, "serve exited \(exit.exitCode) \(String(describing: exit.signal))")
    }

    func journey(port: UInt16, sub: String, document: String = ServeEndToEndTests.document, identityPort: UInt16? = nil) throws -> JSONValue {
        try TestSupport.pythonPeer("serve_e2e.py", ["http://127.0.0.1:\(port)", document, sub] + (identityPort.map { ["http://127.0.0.1:\($0)"] } ?? []))
    }

    static let journeySteps: [JSONValue] = [
        "POST /auth/signin 200", "POST /auth/refresh 200", "POST /auth/link 200", "POST /auth/signin 200", "GET /auth/sessions 200",
        "POST /auth/signout 200", "POST /auth/refresh 401", "GET /auth/sessions 200", "POST /auth/delete-account 200",
        "POST /auth/refresh 401", "POST /auth/signin 200",
    ]

    @Test func aPythonClientsWholeJourneyOnTheLocalStore() throws {
        let serve = try startServe(environment: [:])
        defer { serve.process.kill() }
        let verdict = try journey(port: serve.port, sub: "e2e-local")
        #expect(verdict["ok"] == true, "\(verdict)")
        #expect(verdict["steps"] == .array(ServeEndToEndTests.journeySteps), "\(verdict)")
        // The client's shape checks can fail: a document whose DeletedAccount asks for a field the
        // handler does not send makes the same journey fail at the deletion.
        guard case .object(var document) = OpenAPIDocument.document, case .object(var components)? = document["components"],
              case .object(var schemas)? = components["schemas"], case .object(var deleted)? = schemas["DeletedAccount"] else {
            Issue.record("the document's shape changed")
            return
        }
        deleted["required"] = ["deleted", "userId", "deletedAt"]
        schemas["DeletedAccount"] = .object(deleted)
        components["schemas"] = .object(schemas)
        document["components"] = .object(components)
        let stricter = directory + "/stricter.json"
        try FileSystem.writeAtomically(stricter, JSONValue.object(document).serializedBytes())
        let refused = try journey(port: serve.port, sub: "e2e-stricter", document: stricter)
        #expect(refused["ok"] == false && refused["error"]?.stringValue?.contains("deletedAt") == true, "\(refused)")
        stop(serve.process)
        // One log line per request reached the file: 3 sign-ins of the journey, 2 of the refused one.
        let lines = String(decoding: (try? FileSystem.readFile(serve.log)) ?? [], as: UTF8.self).split(separator: "\n")
        #expect(lines.filter { $0.contains(#""event":"signin""#) }.count == 5, "\(lines.suffix(5))")
    }

    @Test func aPythonClientsWholeJourneyOnDynamoDB() throws {
        let moto = try MotoServer.shared()
        let table = try moto.makeTable(prefix: "serve-e2e")
        let identity = try startServe(environment: [:], devDirectory: directory + "/idp")
        defer { identity.process.kill() }
        var environment = moto.productionEnvironment(table: table.tableName)
        let jwks = "file://" + absolutePath(DevIdentityProvider.jwksPath(in: directory + "/idp"))
        environment["AUTH_GOOGLE_AUDIENCES"] = "demo-web.apps.googleusercontent.com"
        environment["AUTH_APPLE_AUDIENCES"] = "com.example.demo"
        environment["AUTH_GOOGLE_JWKS_URL"] = jwks
        environment["AUTH_APPLE_JWKS_URL"] = jwks
        environment["AUTH_CACHE_DIR"] = directory + "/cache"
        let serve = try startServe(environment: environment)
        defer { serve.process.kill() }
        let verdict = try journey(port: serve.port, sub: "e2e-dynamodb", identityPort: identity.port)
        #expect(verdict["ok"] == true, "\(verdict)")
        #expect(verdict["steps"] == .array(ServeEndToEndTests.journeySteps), "\(verdict)")
        stop(serve.process)
        stop(identity.process)
        // The journey ran on the table (the user signed in after the deletion is in it), not on a
        // local store beside it.
        #expect(try table.scan(limit: nil, exclusiveStartKey: nil).items.isEmpty == false)
    }

    /// 16 clients for 10 seconds (loopback only, stopped by the script's own deadline): sign-ins,
    /// rotations, retries within the grace period (the same live successor comes back), and tokens
    /// whose successor was used (refused as reuse, the family revoked). Every answer is checked by
    /// status and shape; the counts show each kind happened.
    @Test func sixteenConcurrentClientsForTenSeconds() throws {
        let serve = try startServe(environment: [:])
        defer { serve.process.kill() }
        let started = monotonicSeconds()
        let counts = try TestSupport.pythonPeer("serve_load.py", ["http://127.0.0.1:\(serve.port)", ServeEndToEndTests.document, "16", "10"])
        let elapsed = monotonicSeconds() - started
        print("serve under 16 clients for 10 s: \(counts)")
        #expect(counts["errorCount"] == 0, "\(counts)")
        #expect(counts["clients"] == 16)
        // Each client signs in at least once; the rest depends on the machine's speed (other
        // suites run beside this one), so each kind must merely have happened.
        #expect((counts["signins"]?.int64Value ?? 0) >= 16, "\(counts)")
        for kind in ["refreshes", "graceRetries", "reuseRefused", "revokedRefused"] {
            #expect((counts[kind]?.int64Value ?? 0) > 0, "\(kind): \(counts)")
        }
        #expect(elapsed < 40, "bounded: \(elapsed) s")
        stop(serve.process)
        // The server's side agrees: one request line (event and status) per request the clients
        // counted, none a 5xx. Other lines (a reuse warning, the dev key's creation) carry no status.
        let logged = String(decoding: (try? FileSystem.readFile(serve.log)) ?? [], as: UTF8.self).split(separator: "\n")
            .compactMap { try? JSONValue.parse(Array($0.utf8)) }.filter { $0["event"] != nil && $0["status"] != nil }
        #expect(logged.count == Int(counts["requests"]?.int64Value ?? -1), "\(logged.count) lines for \(counts)")
        #expect(logged.allSatisfy { ($0["status"]?.int64Value ?? 500) < 500 }, "\(logged.filter { ($0["status"]?.int64Value ?? 500) >= 500 }.prefix(3))")
    }
}
