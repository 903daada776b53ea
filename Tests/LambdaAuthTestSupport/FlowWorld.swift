import Crypto
import LambdaAuth
import LambdaAuthTooling
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A temporary world for whole-flow tests: Google and Apple test issuers with their JWKS files, a
/// store, a JWKS cache and the handlers' environment on a fixed clock. Handlers run in this
/// process as their executables' stdin mode runs them, or (`processes: true`, `runProcess`,
/// `start`) as those executables, where the process is what a test is about. Every handler's
/// stderr is kept so that tests can check what was logged.
public final class FlowWorld: Sendable {
    public let directory: String
    public let google = TestIssuer(keyIndex: 0, keyID: "google-key-1")
    public let apple = TestIssuer(keyIndex: 1, keyID: "apple-key-1")
    /// The handlers' environment; only `advanceClock` changes it.
    private let settings: Mutex<[String: String]>
    public var environment: [String: String] { settings.withLock { $0 } }
    private let collectedLogs = Mutex<[String]>([])

    /// Where the handlers keep their data and get their AWS credentials from.
    public enum Backend: String, Sendable, CaseIterable, CustomStringConvertible {
        /// The local store in the world's directory, locally minted credentials.
        case local
        /// A fresh table on the shared moto_server (`AUTH_STORE=dynamodb:`), credentials from
        /// moto's STS (`AUTH_CREDENTIALS=sts`).
        case dynamoDB

        public var description: String { rawValue }
    }

    public let backend: Backend
    /// The DynamoDB table the handlers use, when the backend is `.dynamoDB`.
    public let dynamoDBTableName: String?
    /// Every `run` spawns the handler's executable.
    public let runsProcesses: Bool

    /// A world on `backend`. For `.dynamoDB` this starts moto_server (once per process) and
    /// creates the world's own table, which is why it can throw.
    public convenience init(_ extra: [String: String] = [:], backend: Backend, processes: Bool = false) throws {
        guard backend == .dynamoDB else {
            self.init(extra, processes: processes)
            return
        }
        let server = try MotoServer.shared()
        let table = try server.makeTable(prefix: "flow-world")
        var environment = server.productionEnvironment(table: table.tableName)
        for (name, value) in extra { environment[name] = value }
        self.init(environment, dynamoDBTableName: table.tableName, processes: processes)
    }

    public convenience init(_ extra: [String: String] = [:], processes: Bool = false) {
        self.init(extra, dynamoDBTableName: nil, processes: processes)
    }

    private init(_ extra: [String: String], dynamoDBTableName: String?, processes: Bool) {
        backend = dynamoDBTableName == nil ? .local : .dynamoDB
        self.dynamoDBTableName = dynamoDBTableName
        runsProcesses = processes
        directory = TestSupport.temporaryDirectory("flow-world")
        var environment = VerifierEnvironment.make(
            googleJWKS: TestJWKS.file(google.jwks, in: directory, name: "google.json"),
            appleJWKS: TestJWKS.file(apple.jwks, in: directory, name: "apple.json"),
            cacheDirectory: directory + "/cache",
            extra: ["AUTH_STORE": directory + "/store", "AUTH_TEST_MODE": "1", "AUTH_NOW": String(google.now),
                    "AUTH_LOG_LEVEL": "debug"])
        for (name, value) in extra { environment[name] = value }
        settings = Mutex(environment)
    }

    deinit { TestSupport.removeTree(directory) }

    public var storeDirectory: String { environment["AUTH_STORE"]! }
    /// The handlers' fixed clock; tokens are minted at the issuers' own fixed time.
    public var now: Int64 { Int64(environment["AUTH_NOW"]!)! }

    /// Moves the handlers' clock (tokens stay valid for an hour after the issuers' time).
    public func advanceClock(by seconds: Int64) {
        settings.withLock { $0["AUTH_NOW"] = String(Int64($0["AUTH_NOW"]!)! + seconds) }
    }

    /// Sets one variable of the handlers' environment (one that depends on the world's directory).
    public func setEnvironment(_ name: String, _ value: String) {
        settings.withLock { $0[name] = value }
    }

    /// The handlers' store, opened in-process to inspect what they wrote, as reads at `time`
    /// (default: the handlers' clock) see it: `at: 0` hides no expired item.
    public func table(at time: Int64? = nil) throws -> any Table {
        let clock = FixedClock(Double(time ?? now))
        guard let dynamoDBTableName else { return LocalTable(directory: storeDirectory, clock: clock) }
        return DynamoDBTable(tableName: dynamoDBTableName, client: try MotoServer.shared().client(), clock: clock)
    }

    // MARK: tokens

    public func googleToken(subject: String, email: String? = "user@example.com", changes: [String: JSONValue?] = [:]) -> String {
        google.token(google.claims(.google, audience: TestIssuer.googleAudience, subject: subject, email: email, changes: changes))
    }

    public func appleToken(subject: String, email: String? = "relay@privaterelay.appleid.com", changes: [String: JSONValue?] = [:]) -> String {
        apple.token(apple.claims(.apple, audience: TestIssuer.appleAudience, subject: subject, email: email, changes: changes))
    }

    // MARK: invocations

    /// Runs a handler on raw event bytes in this process, as its executable's stdin mode runs it
    /// (`HandlerMain.invokeOnce` on the world's environment, services built afresh, as a new
    /// process builds them), and answers as that process would: the response on stdout, the log
    /// lines on stderr, exit 0. What a process adds is left out: the store maintenance after the
    /// response (a write past four times the threshold still checkpoints inline) and anything
    /// written to the real stderr; tests of those use `runProcess`.
    public func run(_ handler: String, raw: [UInt8], environment extra: [String: String] = [:]) -> ProcessRunner.Output {
        guard !runsProcesses, let entry = HandlerCatalogue.all.first(where: { $0.name == handler }) else {
            return runProcess(handler, raw: raw, environment: extra)
        }
        let output = entry.runInProcess(environment: environment.merging(extra) { $1 }, stdin: raw)
        collectedLogs.withLock { $0.append(output.stderrText) }
        return output
    }

    public func run(_ handler: String, _ event: JSONValue, environment extra: [String: String] = [:]) -> ProcessRunner.Output {
        run(handler, raw: event.serializedBytes(), environment: extra)
    }

    /// Runs the handler's executable on raw event bytes: for tests whose point is the process
    /// (its exit, its whole stderr, what it does after the response). A handler that cannot start
    /// answers as a shell reports it (exit 127, the reason on stderr), so the test fails on its
    /// own expectations and says why.
    public func runProcess(_ handler: String, raw: [UInt8], environment extra: [String: String] = [:]) -> ProcessRunner.Output {
        let output: ProcessRunner.Output
        do {
            output = try ProcessRunner.run(ProcessRunner.executable(handler), environment: environment.merging(extra) { $1 },
                                           stdin: raw)
        } catch {
            output = ProcessRunner.Output(exitCode: 127, stdout: [], stderr: Array(error.description.utf8))
        }
        collectedLogs.withLock { $0.append(output.stderrText) }
        return output
    }

    public func runProcess(_ handler: String, _ event: JSONValue, environment extra: [String: String] = [:]) -> ProcessRunner.Output {
        runProcess(handler, raw: event.serializedBytes(), environment: extra)
    }

    /// Starts a handler without feeding it yet, for races: start many, then `finish` them together.
    public func start(_ handler: String) throws(ProcessRunner.SpawnFailure) -> RunningProcess {
        try ProcessRunner.start(ProcessRunner.executable(handler), environment: environment)
    }

    public func record(_ output: ProcessRunner.Output) {
        collectedLogs.withLock { $0.append(output.stderrText) }
    }

    /// A sign-in that must succeed; returns the response body.
    @discardableResult
    public func signIn(_ provider: ProviderName = .google, token: String, extra: [String: JSONValue] = [:]) -> JSONValue {
        var event: [String: JSONValue] = ["provider": .string(provider.rawValue), "idToken": .string(token)]
        for (name, value) in extra { event[name] = value }
        let output = run("signin", .object(event))
        guard let body = output.json, body["error"] == nil else {
            fatalError("sign-in failed: \(output.stdoutText) \(output.stderrText.suffix(500))")
        }
        return body
    }

    public var logs: [String] { collectedLogs.withLock { $0 } }

    /// Every item of the world's table, in key order (a scan, as `authctl store export` reads it),
    /// as reads at `time` see it (`at: 0`: every item stored, expired or not).
    public func allItems(at time: Int64? = nil) throws -> [Item] {
        let table = try self.table(at: time)
        var items: [Item] = []
        var start: Item?
        repeat {
            let page = try table.scan(limit: nil, exclusiveStartKey: start)
            items += page.items
            start = page.lastEvaluatedKey
        } while start != nil
        return items.sorted { ($0["PK"]?.stringValue ?? "", $0["SK"]?.stringValue ?? "") < ($1["PK"]?.stringValue ?? "", $1["SK"]?.stringValue ?? "") }
    }

    /// What the store holds, to prove a request changed nothing, on either backend: the local
    /// store's files and their bytes, or every DynamoDB item, expired or not.
    public enum StoreState: Equatable, CustomStringConvertible {
        case files([String: String])
        case items([Item])

        public var description: String {
            switch self {
            case .files(let files): return "\(files.count) files: \(files.keys.sorted())"
            case .items(let items): return "\(items.count) items: \(items.map { "\($0["PK"]?.stringValue ?? "") \($0["SK"]?.stringValue ?? "")" })"
            }
        }
    }

    public func storeState() throws -> StoreState {
        backend == .local ? .files(storeSnapshot()) : .items(try allItems(at: 0))
    }

    /// Every file under the store with the SHA-256 of its bytes, to prove a request changed nothing.
    public func storeSnapshot() -> [String: String] {
        var snapshot: [String: String] = [:]
        func walk(_ path: String, _ relative: String) {
            var status = stat()
            guard lstat(path, &status) == 0 else { return }
            if status.st_mode & S_IFMT == S_IFDIR {
                snapshot[relative + "/"] = "directory"
                for name in (try? FileSystem.listDirectory(path)) ?? [] { walk(path + "/" + name, relative + "/" + name) }
            } else {
                snapshot[relative] = Array(SHA256.hash(data: (try? FileSystem.readFile(path)) ?? [])).hexString
            }
        }
        walk(storeDirectory, "")
        return snapshot
    }
}

extension HandlerEntry {
    /// The handler run in this process as its executable's stdin mode runs it, answering as that
    /// process would: the response and a newline on stdout, the log lines on stderr, exit 0.
    public func runInProcess(environment: [String: String], stdin: [UInt8]) -> ProcessRunner.Output {
        let lines = Mutex<[UInt8]>([])
        let response = HandlerMain.invokeOnce(name: name, environment: environment, event: stdin, factory: factory) { line in
            lines.withLock { $0 += Array(line.utf8) + [0x0A] }
        }
        return ProcessRunner.Output(exitCode: 0, stdout: response.serializedBytes() + [0x0A], stderr: lines.withLock { $0 })
    }
}

extension ProcessRunner.Output {
    /// The response body, whatever the event kind (HTTP responses carry it as JSON text).
    public var responseBody: JSONValue? {
        guard let document = json else { return nil }
        if document["statusCode"] != nil, let text = document["body"]?.stringValue { return try? JSONValue.parse(text) }
        return document
    }

    public var errorCode: String? { responseBody?["error"]?["code"]?.stringValue }
}

/// Runs `count` jobs at the same moment on their own threads and returns their results in order.
public func runSimultaneously<T: Sendable>(_ count: Int, _ job: @escaping @Sendable (Int) -> T) -> [T] {
    let progress = Mutex((results: [T?](repeating: nil, count: count), finished: 0))
    for index in 0..<count {
        BackgroundThread.detach {
            let result = job(index)
            progress.withLock {
                $0.results[index] = result
                $0.finished += 1
            }
        }
    }
    while progress.withLock({ $0.finished }) < count { usleep(2000) }
    return progress.withLock { $0.results.map { $0! } }
}
