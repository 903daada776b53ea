import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `authctl serve` as a process: the embedded dev defaults, its start-up refusals, and SIGTERM.
@Suite final class ServeProcessTests {
    let directory = TestSupport.temporaryDirectory("serve-process")

    deinit { TestSupport.removeTree(directory) }

    /// A port nobody listens on right now (the system's choice, released at once).
    static func freePort() throws -> UInt16 {
        let probe = try LoopbackHTTPServer { _ in .init() }
        let port = probe.port
        probe.stop()
        usleep(50_000)
        return port
    }

    /// On the dev defaults unless `environment` names something real.
    func startServe(port: UInt16, environment: [String: String] = [:], arguments: [String] = []) throws -> RunningProcess {
        try ProcessRunner.start(ProcessRunner.executable("authctl"), arguments: ["serve", "--port", String(port), "--dev-dir", directory + "/dev"]
                                + arguments, environment: environment)
    }

    func waitUntilListening(_ port: UInt16) throws {
        let deadline = monotonicSeconds() + 30
        while monotonicSeconds() < deadline {
            if (try? RawConnection(port: port)) != nil { return }
            usleep(50_000)
        }
        throw RawConnection.Failure(description: "authctl serve did not listen on \(port) within 30 s")
    }

    @Test func theDevDefaultsSignInAndSIGTERMFinishesTheRequestInFlight() throws {
        let port = try ServeProcessTests.freePort()
        let serve = try startServe(port: port)
        defer { serve.kill() }
        try waitUntilListening(port)
        let http = CurlHTTPClient()
        let base = "http://127.0.0.1:\(port)"
        // On the dev defaults, the dev identity provider's token (default audience) signs in.
        let minted = try http.send(HTTPRequest(method: "POST", url: base + "/dev/idp/google/token",
                                               body: Array(#"{"sub":"app-team","email":"dev@example.com"}"#.utf8), timeout: 20))
        #expect(minted.status == 200)
        let idToken = try #require((try? JSONValue.parse(minted.body))?["idToken"]?.stringValue)
        let signIn = try http.send(HTTPRequest(method: "POST", url: base + "/auth/signin",
                                               body: JSONValue.object(["provider": "google", "idToken": .string(idToken)]).serializedBytes(),
                                               timeout: 20))
        #expect(signIn.status == 200, "\(String(decoding: signIn.body, as: UTF8.self))")
        #expect(try http.send(HTTPRequest(url: base + "/nowhere", timeout: 20)).status == 404)
        // Email codes are on, delivered to the dev directory's outbox.
        let code = try http.send(HTTPRequest(method: "POST", url: base + "/auth/otp/start", body: Array(#"{"email":"dev@example.com"}"#.utf8),
                                             timeout: 20))
        #expect(code.status == 202, "\(String(decoding: code.body, as: UTF8.self))")
        #expect(Outbox.latestCode(to: "dev@example.com", in: directory + "/dev/outbox") != nil)

        // A connection that never sends (a browser's preconnection) must not hold the stop, and a
        // request whose body is still arriving when SIGTERM comes is answered before the exit.
        let idle = try RawConnection(port: port)
        let slow = try RawConnection(port: port)
        let body = #"{"sub":"in-flight"}"#
        try slow.send("POST /dev/idp/apple/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: \(body.utf8.count)\r\n\r\n" + body.prefix(6))
        usleep(200_000)
        serve.kill(SIGTERM)
        usleep(500_000)
        #expect((try? RawConnection(port: port)) == nil, "a stopping serve takes no new connection")
        try slow.send(String(body.dropFirst(6)))
        let answer = try slow.readResponse()
        #expect(answer.status == 200 && answer.body.contains("idToken"), "\(answer)")
        let finishing = monotonicSeconds()
        let exit = serve.finish()
        #expect(exit.exitCode == 0 && exit.signal == nil, "\(exit.stderrText)")
        #expect(monotonicSeconds() - finishing < 10, "the idle connection held the stop")
        #expect(try idle.readResponse().status == 0, "the idle connection was closed unanswered")
        #expect(exit.stdoutText.hasPrefix("lambda-auth serving on http://127.0.0.1:\(port) (dev mode: store \(directory)/dev/store"), "\(exit.stdoutText)")
        // One event line per request, each with its own request id.
        let eventLines = exit.stderrText.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }.filter { $0["event"] != nil }
        #expect(eventLines.compactMap { $0["event"]?.stringValue } == ["dev_idp_token", "signin", "gateway_failed", "code_sent", "dev_idp_token"])
        #expect(Set(eventLines.compactMap { $0["requestId"]?.stringValue }).count == 5)
    }

    @Test func aHostThatIsNotAnAddressOrAPortInUseIsAOneLineError() throws {
        let unusable = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["serve", "--host", "example.com", "--port", "0",
                                                                                          "--dev-dir", directory + "/dev"],
                                             environment: ["AUTH_STORE": directory + "/store"])
        #expect(unusable.exitCode == 1 && unusable.stderrText == "authctl: --host example.com is not an IPv4 address\n", "\(unusable.stderrText)")
        let taken = try LoopbackHTTPServer { _ in .init() }
        defer { taken.stop() }
        let inUse = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["serve", "--port", String(taken.port),
                                                                                        "--dev-dir", directory + "/dev"],
                                          environment: ["AUTH_STORE": directory + "/store"])
        #expect(inUse.exitCode == 1 && inUse.stderrText == "authctl: cannot listen on 127.0.0.1:\(taken.port): the port is in use\n",
                "\(inUse.stderrText)")
    }

    /// The reproduced takeover: no provider configured (an app on email codes) but a real store,
    /// and serve minted dev "Google" tokens into it. Now it runs as configured, says so, and has
    /// no dev route; `--dev` refuses what is real.
    @Test func theDevIdentityProviderIsNeverOnRealData() throws {
        let port = try ServeProcessTests.freePort()
        let serve = try startServe(port: port, environment: ["AUTH_STORE": directory + "/real-store"])
        defer { serve.kill() }
        try waitUntilListening(port)
        let minted = try CurlHTTPClient().send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/dev/idp/google/token",
                                                          body: Array(#"{"sub":"victim","email":"victim@example.com"}"#.utf8), timeout: 20))
        #expect(minted.status == 404)
        serve.kill(SIGTERM)
        let exit = serve.finish()
        #expect(exit.stdoutText.contains("(configured mode: the environment as given, no dev identity provider; a store other than the dev one"),
                "\(exit.stdoutText)")
        let refused = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["serve", "--dev", "--port", "0", "--dev-dir", directory + "/dev"],
                                            environment: ["AUTH_STORE": "dynamodb:users"])
        #expect(refused.exitCode == 1 && refused.stderrText.contains("--dev") && refused.stderrText.contains("DynamoDB"), "\(refused.stderrText)")
    }

    /// Out of descriptors, accept fails with EMFILE: serve waits for connections to close instead
    /// of stopping for good while the process stays up.
    @Test func runningOutOfDescriptorsIsSurvived() throws {
        let port = try ServeProcessTests.freePort()
        let serve = try ProcessRunner.start("/bin/sh", arguments: ["-c", #"ulimit -n 64 && exec "$1" serve --port "$2" --dev-dir "$3""#, "sh",
                                                                  ProcessRunner.executable("authctl"), String(port), directory + "/dev"])
        defer { serve.kill() }
        try waitUntilListening(port)
        var held = (0..<100).compactMap { _ in try? RawConnection(port: port) }
        #expect(held.count == 100)
        usleep(500_000)
        held.removeAll()
        usleep(500_000)
        let answer = try CurlHTTPClient().send(HTTPRequest(url: "http://127.0.0.1:\(port)/openapi.json", timeout: 20))
        #expect(answer.status == 200)
    }
}
