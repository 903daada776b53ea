#if canImport(Glibc)
import Glibc
#endif

/// Glibc's module map hides pipe2 (it needs _GNU_SOURCE); the symbol is there all the same.
@_silgen_name("pipe2") private func systemPipe2(_ descriptors: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// Runs executables as child processes with an exact environment: authctl uses it to invoke the
/// handlers (invoke, demo, replay) and the tests use it to run them as Lambda and users do.
public enum ProcessRunner {
    public struct Output: Sendable {
        public var exitCode: Int32
        /// Set when the process died from a signal.
        public var signal: Int32?
        public var stdout: [UInt8]
        public var stderr: [UInt8]

        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// stdout parsed as JSON (the handlers' response document).
        public var json: JSONValue? { try? JSONValue.parse(stdout) }
    }

    /// The path of the running executable.
    public static var currentExecutable: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        precondition(count > 0, "cannot read /proc/self/exe")
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The directory holding the package's built executables: the one holding `authctl`, at or
    /// above the running executable (the test bundle lives next to them).
    public static var binDirectory: String {
        var directory = FileSystem.parentDirectory(of: currentExecutable)
        // swift test runs .../debug/lambda-authPackageTests.xctest (a file on Linux).
        while !directory.isEmpty, directory != "/", !FileSystem.exists(directory + "/authctl") {
            directory = FileSystem.parentDirectory(of: directory)
        }
        return directory
    }

    public static func executable(_ name: String) -> String { binDirectory + "/" + name }

    /// Runs `executable` with exactly `environment` (nothing inherited but PATH and HOME), feeding
    /// `stdin`, and waits for it.
    public static func run(_ executable: String, arguments: [String] = [], environment: [String: String] = [:],
                           stdin: [UInt8] = [], workingDirectory: String? = nil) -> Output {
        let process = start(executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory)
        return process.finish(stdin: stdin)
    }

    public static func start(_ executable: String, arguments: [String] = [], environment: [String: String] = [:],
                             workingDirectory: String? = nil) -> RunningProcess {
        RunningProcess(executable: executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory)
    }
}

/// A child process with pipes on stdin, stdout and stderr.
public final class RunningProcess: @unchecked Sendable {
    public let pid: pid_t
    private let stdinWrite: Int32
    private let stdoutRead: Int32
    private let stderrRead: Int32

    init(executable: String, arguments: [String], environment: [String: String], workingDirectory: String?) {
        var stdinPipe: [Int32] = [0, 0], stdoutPipe: [Int32] = [0, 0], stderrPipe: [Int32] = [0, 0]
        // O_CLOEXEC: a child spawned at the same moment by another thread must not inherit these
        // ends, or this child's stdin would never see end-of-file (dup2 into 0/1/2 clears the flag).
        precondition(systemPipe2(&stdinPipe, O_CLOEXEC) == 0 && systemPipe2(&stdoutPipe, O_CLOEXEC) == 0
            && systemPipe2(&stderrPipe, O_CLOEXEC) == 0)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        for descriptor in stdinPipe + stdoutPipe + stderrPipe { posix_spawn_file_actions_addclose(&actions, descriptor) }
        var inherited = environment
        let current = Environment.current()
        for name in ["PATH", "HOME", "LANG"] where inherited[name] == nil { inherited[name] = current[name] }
        // GNU env's -C changes directory without a shell in between.
        let command = workingDirectory.map { ["/usr/bin/env", "-C", $0, executable] } ?? [executable]
        let argv = (command + arguments).map { strdup($0) } + [nil]
        let envp = inherited.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
            posix_spawn_file_actions_destroy(&actions)
        }
        // The test runner's threads block most signals, and a spawned child would inherit that
        // mask (a SIGTERM would then never arrive): children start as Lambda starts them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        var emptySet = sigset_t(), defaultSet = sigset_t()
        sigemptyset(&emptySet)
        sigfillset(&defaultSet)
        posix_spawnattr_setsigmask(&attributes, &emptySet)
        posix_spawnattr_setsigdefault(&attributes, &defaultSet)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        defer { posix_spawnattr_destroy(&attributes) }
        var child = pid_t()
        let result = posix_spawn(&child, command[0], &actions, &attributes, argv, envp)
        precondition(result == 0, "posix_spawn \(executable) failed: \(result)")
        pid = child
        close(stdinPipe[0]); close(stdoutPipe[1]); close(stderrPipe[1])
        stdinWrite = stdinPipe[1]
        stdoutRead = stdoutPipe[0]
        stderrRead = stderrPipe[0]
    }

    /// Sends `stdin`, closes it, collects all output and waits for the exit.
    public func finish(stdin: [UInt8] = []) -> ProcessRunner.Output {
        let input = stdin
        let writer = stdinWrite
        BackgroundThread.detach {
            var offset = 0
            while offset < input.count {
                let written = input.withUnsafeBytes { write(writer, $0.baseAddress! + offset, $0.count - offset) }
                if written <= 0 { break }
                offset += written
            }
            close(writer)
        }
        let errorCollector = Collector(stderrRead)
        let stdout = Collector.readAll(stdoutRead)
        let stderr = errorCollector.wait()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let signaled = status & 0x7F != 0 && status & 0x7F != 0x7F
        return ProcessRunner.Output(exitCode: (status >> 8) & 0xFF, signal: signaled ? status & 0x7F : nil,
                                    stdout: stdout, stderr: stderr)
    }

    public func kill(_ signal: Int32 = SIGKILL) {
        _ = Glibc.kill(pid, signal)
    }
}


/// Drains a pipe on its own thread so that a chatty child never blocks on a full pipe.
final class Collector: @unchecked Sendable {
    private let done = Mutex()
    private var output: [UInt8] = []
    private var finished = false

    init(_ descriptor: Int32) {
        BackgroundThread.detach { [self] in
            let bytes = Collector.readAll(descriptor)
            done.withLock {
                output = bytes
                finished = true
            }
        }
    }

    func wait() -> [UInt8] {
        while true {
            let result: [UInt8]? = done.withLock { finished ? output : nil }
            if let result { return result }
            usleep(1000)
        }
    }

    static func readAll(_ descriptor: Int32) -> [UInt8] {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            output.append(contentsOf: chunk[0..<count])
        }
        close(descriptor)
        return output
    }
}
