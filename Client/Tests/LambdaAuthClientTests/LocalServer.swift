import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
@testable import LambdaAuthClient

/// `authctl serve` of this repository (built by the root package: `make test` builds it first;
/// `LAMBDA_AUTH_BIN` names another build directory) on a free loopback port, in a directory of
/// its own (the dev defaults keep their store there), started and stopped by the test.
final class LocalServer: @unchecked Sendable {
    let directory: String
    /// Chosen by serve at the first start, kept across restarts.
    private(set) var port: Int?
    let environment: [String: String]
    private var process: Process?
    private let logPath: String

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port ?? 0)")! }

    static var binDirectory: String {
        if let configured = ProcessInfo.processInfo.environment["LAMBDA_AUTH_BIN"], !configured.isEmpty { return configured }
        // Client/Tests/LambdaAuthClientTests/LocalServer.swift → the repository's debug build.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug").path
    }

    init(environment: [String: String] = [:]) throws {
        directory = NSTemporaryDirectory() + "lambda-auth-serve-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        logPath = directory + "/serve.log"
        self.environment = environment
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func start() throws {
        let executable = LocalServer.binDirectory + "/authctl"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw AuthClientError.invalidResponse("no authctl at \(executable): build the root package first (make test does)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        // Port 0 the first time: serve binds a port the system chooses and prints it, so two
        // servers starting at once can never be handed one port (a port probed free and released
        // could be, and a client would then talk to the other server, which answers 503 until its
        // handlers are built). A restart asks for the port the client already knows.
        process.arguments = ["serve", "--port", String(port ?? 0)]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AUTH_") }
        variables.merge(environment) { $1 }
        process.environment = variables
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        output.seekToEndOfFile()
        process.standardError = output
        process.standardOutput = output
        try process.run()
        self.process = process
        // Serve prints its address once its handlers answer: that line, from this process, is
        // the sign that it is up (a listening port alone may be another server's).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let announced = LocalServer.announcedPort(log()) {
                port = announced
                return
            }
            guard process.isRunning else { throw AuthClientError.invalidResponse("serve exited: \(log(tail: 2000))") }
            usleep(20_000)
        }
        throw AuthClientError.invalidResponse("serve did not answer within 60 s: \(log(tail: 2000))")
    }

    /// SIGTERM, then waits for it to end.
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
    }

    func log(tail count: Int = .max) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return String(text.suffix(count))
    }

    /// How many requests `serve` logged with this event (its one event line per request).
    func events(_ name: String) -> Int {
        log().split(separator: "\n").filter { $0.contains("\"event\":\"\(name)\"") }.count
    }

    /// An ID token from the dev identity provider that `serve` publishes.
    func idToken(_ provider: String, subject: String, email: String? = nil) async throws -> String {
        var body: [String: JSON] = ["sub": .string(subject)]
        if let email { body["email"] = .string(email) }
        guard let token = try await request("POST", "/dev/idp/\(provider)/token", body: body)["idToken"]?.stringValue else {
            throw AuthClientError.invalidResponse("no idToken from the dev identity provider")
        }
        return token
    }

    /// A plain request, outside any client (as another app, or a thief, would send it).
    func request(_ method: String, _ path: String, body: [String: JSON]?, bearer: String? = nil) async throws(AuthClientError) -> JSON {
        try await Transport(baseURL: baseURL, session: URLSession(configuration: .ephemeral)).send(method, path, body: body, bearer: bearer)
    }

    /// The port in serve's "lambda-auth serving on http://127.0.0.1:PORT" line, once written.
    static func announcedPort(_ log: String) -> Int? {
        let marker = "lambda-auth serving on http://127.0.0.1:"
        guard let start = log.range(of: marker)?.upperBound else { return nil }
        let digits = log[start...].prefix { $0.isNumber }
        guard log[start...].dropFirst(digits.count).first == " " else { return nil }
        return Int(digits)
    }
}
