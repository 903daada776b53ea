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
    let port: Int
    let environment: [String: String]
    private var process: Process?
    private let logPath: String

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

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
        port = try LocalServer.freePort()
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
        process.arguments = ["serve", "--port", String(port)]
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
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if LocalServer.accepts(port: port) { return }
            guard process.isRunning else { throw AuthClientError.invalidResponse("serve exited: \(log(tail: 2000))") }
            usleep(50_000)
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

    /// Whether something listens on the port (serve is up once it does).
    static func accepts(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw AuthClientError.invalidResponse("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
