import LambdaAuth
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

        public init(exitCode: Int32, signal: Int32? = nil, stdout: [UInt8], stderr: [UInt8]) {
            self.exitCode = exitCode
            self.signal = signal
            self.stdout = stdout
            self.stderr = stderr
        }

        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// stdout parsed as JSON (the handlers' response document).
        public var json: JSONValue? { try? JSONValue.parse(stdout) }
    }

    /// A child that never started: no such executable, no permission, or no descriptors or
    /// processes left.
    public struct SpawnFailure: Error, Sendable, CustomStringConvertible {
        public let executable: String
        public let operation: String
        public let errno: Int32

        public var description: String {
            "cannot start \(executable): \(operation): \(String(cString: strerror(errno)))"
        }
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

    /// `name`'s path: beside authctl, except a handler when `LAMBDA_AUTH_HANDLER_BIN` names the
    /// directory of the zips' build (make bench measures what is shipped, built apart).
    public static func executable(_ name: String) -> String {
        if HandlerNames.all.contains(name), let directory = getenv("LAMBDA_AUTH_HANDLER_BIN").map({ String(cString: $0) }), !directory.isEmpty {
            return directory + "/" + name
        }
        return binDirectory + "/" + name
    }

    /// Runs `executable` with exactly `environment` (nothing inherited but PATH, HOME and LANG),
    /// feeding `stdin`, and waits for it.
    public static func run(_ executable: String, arguments: [String] = [], environment: [String: String] = [:],
                           stdin: [UInt8] = []) throws(SpawnFailure) -> Output {
        try start(executable, arguments: arguments, environment: environment).finish(stdin: stdin)
    }

    public static func start(_ executable: String, arguments: [String] = [],
                             environment: [String: String] = [:]) throws(SpawnFailure) -> RunningProcess {
        try RunningProcess(executable: executable, arguments: arguments, environment: environment)
    }
}

/// A child process with pipes on stdin, stdout and stderr.
public final class RunningProcess: Sendable {
    public let pid: pid_t
    private let stdinWrite: Int32
    private let stdoutRead: Int32
    private let stderrRead: Int32

    init(executable: String, arguments: [String], environment: [String: String]) throws(ProcessRunner.SpawnFailure) {
        // stdin read/write, stdout read/write, stderr read/write. O_CLOEXEC: a child spawned at the
        // same moment by another thread must not inherit these ends, or this child's stdin would
        // never see end-of-file (dup2 into 0/1/2 clears the flag for this child).
        var ends = [Int32](repeating: -1, count: 6)
        for pair in 0..<3 {
            guard ends.withUnsafeMutableBufferPointer({ systemPipe2($0.baseAddress! + 2 * pair, O_CLOEXEC) }) == 0 else {
                let code = errno
                ends.filter { $0 >= 0 }.forEach { close($0) }
                throw ProcessRunner.SpawnFailure(executable: executable, operation: "pipe2", errno: code)
            }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_adddup2(&actions, ends[3], 1)
        posix_spawn_file_actions_adddup2(&actions, ends[5], 2)
        var inherited = environment
        let current = Environment.current()
        for name in ["PATH", "HOME", "LANG"] where inherited[name] == nil { inherited[name] = current[name] }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = inherited.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // The test runner's threads block most signals, and a spawned child would inherit that
        // mask (a SIGTERM would then never arrive): children start as Lambda starts them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptySet = sigset_t(), defaultSet = sigset_t()
        sigemptyset(&emptySet)
        sigfillset(&defaultSet)
        posix_spawnattr_setsigmask(&attributes, &emptySet)
        posix_spawnattr_setsigdefault(&attributes, &defaultSet)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child = pid_t()
        // glibc reports an exec that failed (missing file, no permission) here, not as an exit.
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        for childEnd in [ends[0], ends[3], ends[5]] { close(childEnd) }
        guard result == 0 else {
            for parentEnd in [ends[1], ends[2], ends[4]] { close(parentEnd) }
            throw ProcessRunner.SpawnFailure(executable: executable, operation: "posix_spawn", errno: result)
        }
        pid = child
        stdinWrite = ends[1]
        stdoutRead = ends[2]
        stderrRead = ends[4]
        // Written only when poll says there is room, so a write never blocks the drain of the
        // child's output.
        _ = fcntl(stdinWrite, F_SETFL, fcntl(stdinWrite, F_GETFL) | O_NONBLOCK)
    }

    /// Sends `stdin`, closes it, collects all output and waits for the exit. Call it once.
    public func finish(stdin: [UInt8] = []) -> ProcessRunner.Output {
        let (stdout, stderr) = RunningProcess.withSIGPIPEBlocked { exchange(stdin) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let signaled = status & 0x7F != 0 && status & 0x7F != 0x7F
        return ProcessRunner.Output(exitCode: (status >> 8) & 0xFF, signal: signaled ? status & 0x7F : nil,
                                    stdout: stdout, stderr: stderr)
    }

    /// For a resident child that answers each line on stdin with one line on stdout (nothing
    /// more until the next line): sends `line` and a newline, returns the answer without its
    /// newline; nil when the child went away. Not to be mixed with `finish`.
    public func exchangeLine(_ line: [UInt8]) -> [UInt8]? {
        RunningProcess.withSIGPIPEBlocked {
            let message = line + [UInt8(ascii: "\n")]
            var written = 0
            while written < message.count {
                let count = message.withUnsafeBytes { write(stdinWrite, $0.baseAddress! + written, $0.count - written) }
                if count > 0 {
                    written += count
                } else if count < 0, errno == EAGAIN {
                    var watched = pollfd(fd: stdinWrite, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&watched, 1, -1)
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return nil
                }
            }
            var answer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while answer.last != UInt8(ascii: "\n") {
                let count = chunk.withUnsafeMutableBytes { read(stdoutRead, $0.baseAddress, $0.count) }
                if count > 0 {
                    answer += chunk[0..<count]
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return nil
                }
            }
            return Array(answer.dropLast())
        }
    }

    public func kill(_ signal: Int32 = SIGKILL) {
        _ = Glibc.kill(pid, signal)
    }

    /// Feeds stdin and drains stdout and stderr in one poll loop, blocked in poll until one of
    /// them is ready, so that a child that writes before it has read everything cannot deadlock
    /// against us. Returns when both outputs reach end of file (the child exited or closed them).
    private func exchange(_ input: [UInt8]) -> (stdout: [UInt8], stderr: [UInt8]) {
        var writer = stdinWrite
        var written = 0
        if input.isEmpty {
            close(writer)
            writer = -1
        }
        var readers = [stdoutRead, stderrRead]
        var collected: [[UInt8]] = [[], []]
        var chunk = [UInt8](repeating: 0, count: 65_536)
        // poll skips negative descriptors: finished streams stay in place as -1.
        while writer >= 0 || readers.contains(where: { $0 >= 0 }) {
            var watched = [pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)]
                + readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if poll(&watched, nfds_t(watched.count), -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            if writer >= 0, watched[0].revents != 0 {
                let count = input.withUnsafeBytes { write(writer, $0.baseAddress! + written, $0.count - written) }
                if count > 0 { written += count }
                // EPIPE: the child exited or closed its stdin without reading everything.
                if written == input.count || (count < 0 && errno != EAGAIN && errno != EINTR) {
                    close(writer)
                    writer = -1
                }
            }
            for index in readers.indices where readers[index] >= 0 && watched[index + 1].revents != 0 {
                let count = chunk.withUnsafeMutableBytes { read(readers[index], $0.baseAddress, $0.count) }
                if count > 0 {
                    collected[index] += chunk[0..<count]
                } else if count == 0 || errno != EINTR {
                    close(readers[index])
                    readers[index] = -1
                }
            }
        }
        // Only after a poll failure: nothing more will be read or written.
        for descriptor in [writer] + readers where descriptor >= 0 { close(descriptor) }
        return (collected[0], collected[1])
    }

    /// Writing to a child that exited raises SIGPIPE, whose default action would end this whole
    /// process (the test runner, authctl): it is blocked on this thread while `body` writes, and
    /// one that `body` raised is taken off the pending set, so the write just fails with EPIPE.
    private static func withSIGPIPEBlocked<T>(_ body: () -> T) -> T {
        var pipeSignal = sigset_t(), previousMask = sigset_t(), pending = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previousMask)
        sigpending(&pending)
        let alreadyPending = sigismember(&pending, SIGPIPE) == 1
        let result = body()
        if !alreadyPending {
            var noWait = timespec()
            _ = sigtimedwait(&pipeSignal, nil, &noWait)
        }
        pthread_sigmask(SIG_SETMASK, &previousMask, nil)
        return result
    }
}
