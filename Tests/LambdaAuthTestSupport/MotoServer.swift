import LambdaAuth
import LambdaAuthTooling
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// moto_server (a DynamoDB- and STS-compatible peer, `pip install 'moto[server]'`, which `.ci/run`
/// does) on 127.0.0.1, serving one request at a time (Tests/Scripts/serial-moto-server.py),
/// started once per test process on a free port and stopped at exit. Tests
/// share it and keep apart by using their own table names and keys.
///
/// Missing moto_server is an error, never a skip: the AWS tests cannot prove anything without it.
public final class MotoServer: Sendable {
    public let port: UInt16
    /// The supervising Python process; moto_server is its child.
    public let pid: pid_t
    public let logPath: String
    /// Held open for the life of the test process: when it closes (at exit, or when the process
    /// dies however it dies) the supervisor stops moto_server, so no server outlives us.
    private let lifeline: Int32

    public var endpoint: String { "http://127.0.0.1:\(port)" }
    public static let region = "us-east-1"
    /// moto accepts any credentials; these are the conventional fake ones.
    public static let credentials = AWSCredentials(accessKeyID: "testing", secretAccessKey: "testing")

    /// The environment a handler or authctl process needs to reach this server.
    public func environment(table: String) -> [String: String] {
        ["AUTH_STORE": "dynamodb:\(table)", "AUTH_DYNAMODB_ENDPOINT": endpoint, "AUTH_STS_ENDPOINT": endpoint,
         "AWS_REGION": MotoServer.region, "AWS_ACCESS_KEY_ID": MotoServer.credentials.accessKeyID,
         "AWS_SECRET_ACCESS_KEY": MotoServer.credentials.secretAccessKey]
    }

    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    private static let started: Result<MotoServer, StartFailure> = {
        do {
            let server = try MotoServer()
            atexit { MotoServer.stopShared() }
            return .success(server)
        } catch let failure as StartFailure {
            return .failure(failure)
        } catch {
            return .failure(StartFailure(description: String(describing: error)))
        }
    }()

    /// The process-wide server, started on first use.
    public static func shared() throws -> MotoServer {
        try started.get()
    }

    private static func stopShared() {
        guard case .success(let server) = started else { return }
        close(server.lifeline)
        var status: Int32 = 0
        let deadline = monotonicSeconds() + 5
        while waitpid(server.pid, &status, WNOHANG) == 0 {
            guard monotonicSeconds() < deadline else {
                kill(-server.pid, SIGKILL)
                _ = waitpid(server.pid, &status, 0)
                return
            }
            usleep(20_000)
        }
    }

    /// Runs moto_server, exits with it, and stops it when standard input reaches end of file.
    /// Python rather than sh because it first closes every descriptor it inherited: the test
    /// process spawns other children concurrently, and a long-lived holder of one of their pipe
    /// ends would keep their readers waiting for end of file forever.
    static let supervisor = """
        import os, subprocess, sys, threading
        os.closerange(3, 65536)
        try:
            import moto.server
        except ImportError:
            sys.stderr.write("moto_server is not installed\\n")
            sys.exit(127)
        server = subprocess.Popen([sys.executable, sys.argv[2], sys.argv[1]], stdin=subprocess.DEVNULL)
        def stop_at_end_of_input():
            sys.stdin.buffer.read()
            server.terminate()
        threading.Thread(target=stop_at_end_of_input, daemon=True).start()
        sys.exit(server.wait())
        """

    /// moto_server serving one request at a time (see the script for why), beside this package's
    /// tests; `make test`'s replay on moto runs the same script.
    public static let serialServerPath = TestSupport.scriptPath("serial-moto-server.py")

    private init() throws {
        port = try MotoServer.freePort()
        let directory = TestSupport.temporaryDirectory("moto")
        logPath = directory + "/moto_server.log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // A log file, not a pipe: moto logs every request, and an unread pipe would stall it.
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw StartFailure(description: "pipe() failed") }
        // Other processes the tests spawn must not inherit the lifeline and keep it open.
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[0], 0)
        let arguments: [String] = ["/usr/bin/env", "python3", "-c", MotoServer.supervisor, String(port), MotoServer.serialServerPath]
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = Environment.current().map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child = pid_t()
        // The spawning thread (a test runner worker) blocks most signals, and a child inherits
        // that mask: without resetting it, moto_server would ignore the SIGTERM meant to stop it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // Its own process group, so that a stuck server can be killed with its supervisor.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        let result = posix_spawn(&child, "/usr/bin/env", &actions, &attributes, argv, envp)
        close(pipeEnds[0])
        guard result == 0 else {
            close(pipeEnds[1])
            throw StartFailure(description: "cannot spawn moto_server: error \(result)")
        }
        pid = child
        lifeline = pipeEnds[1]
        try waitUntilReady()
    }

    private func waitUntilReady() throws {
        let client = CurlHTTPClient()
        let deadline = monotonicSeconds() + 30
        while monotonicSeconds() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                let log = (try? FileSystem.readFile(logPath)).map { String(decoding: $0, as: UTF8.self) } ?? ""
                throw StartFailure(description: """
                    moto_server exited (exit status \((status >> 8) & 0xFF)) before answering; install it with \
                    pip install 'moto[server]' (.ci/run does). Its output: \(log.suffix(2000))
                    """)
            }
            if let response = try? client.send(HTTPRequest(url: endpoint + "/moto-api/", timeout: 1)), response.status == 200 {
                return
            }
            usleep(100_000)
        }
        close(lifeline)
        throw StartFailure(description: "moto_server did not answer on \(endpoint) within 30 s; log: \(logPath)")
    }

    /// A port the system just handed out and released: free unless another process grabs it in
    /// the moment before moto binds it.
    private static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw StartFailure(description: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw StartFailure(description: "cannot find a free port on 127.0.0.1") }
        return UInt16(bigEndian: address.sin_port)
    }
}

extension MotoServer {
    /// A client for this server. `sleeper` defaults to not sleeping: moto does not throttle, and
    /// fault tests bring their own.
    public func client(random: any RandomSource = SystemRandomSource(), sleeper: any Sleeper = NoSleeper()) -> DynamoDBClient {
        DynamoDBClient(endpoint: endpoint, region: MotoServer.region, credentials: MotoServer.credentials,
                       http: CurlHTTPClient(), random: random, sleeper: sleeper)
    }

    /// The production configuration on this server: `AUTH_STORE=dynamodb:table`,
    /// `AUTH_CREDENTIALS=sts` with moto's STS, and the access-token key DynamoDB requires.
    public func productionEnvironment(table: String) -> [String: String] {
        var environment = environment(table: table)
        environment["AUTH_CREDENTIALS"] = "sts"
        environment["AUTH_STS_ROLE_ARN"] = "arn:aws:iam::123456789012:role/lambda-auth-users"
        environment["AUTH_USER_BUCKET"] = "lambda-auth-test-users"
        environment["AUTH_SIGNING_KEY"] = AccessTokenKey.generate().pemRepresentation
        return environment
    }

    /// A new table with the contract's layout (keys, GSI1, TTL), named uniquely for this test.
    public func makeTable(prefix: String = "lambda-auth-test", clock: any WallClock = SystemClock()) throws -> DynamoDBTable {
        let name = "\(prefix)-\(SystemRandomSource().bytes(8).hexString)"
        let table = DynamoDBTable(tableName: name, client: client(), clock: clock)
        _ = try table.createTable(sleeper: NoSleeper())
        return table
    }
}

/// Records the delays it is asked to wait instead of waiting them.
public final class RecordingSleeper: Sleeper, Sendable {
    private let recorded = Mutex<[Double]>([])

    public init() {}

    public func sleep(seconds: Double) { recorded.withLock { $0.append(seconds) } }
    public var delays: [Double] { recorded.withLock { $0 } }
}

public struct NoSleeper: Sleeper {
    public init() {}
    public func sleep(seconds: Double) {}
}

/// The same byte over and over: makes jittered delays predictable (0xFF: the whole window,
/// 0x00: no wait, 0x80: about half).
public struct RepeatingRandomSource: RandomSource {
    public let byte: UInt8
    public init(byte: UInt8) { self.byte = byte }
    public func bytes(_ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }
}
