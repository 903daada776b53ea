import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Child processes as authctl and the tests run them: failures to start are errors, output of any
/// size is collected while input is fed, and waiting sleeps in the kernel.
@Suite struct ProcessRunnerTests {
    @Test func aMissingExecutableIsAThrownSpawnFailure() {
        let missing = "/nonexistent/lambda-auth-no-such-tool"
        #expect {
            _ = try ProcessRunner.run(missing)
        } throws: { error in
            let failure = error as? ProcessRunner.SpawnFailure
            return failure?.errno == ENOENT && failure?.description == "cannot start \(missing): posix_spawn: No such file or directory"
        }
    }

    @Test func aFileWithoutExecutePermissionIsAThrownSpawnFailure() throws {
        let directory = TestSupport.temporaryDirectory("process-runner")
        defer { TestSupport.removeTree(directory) }
        let script = directory + "/not-executable"
        try FileSystem.writeAtomically(script, Array("#!/bin/sh\nexit 0\n".utf8), mode: 0o644)
        #expect(throws: ProcessRunner.SpawnFailure.self) { try ProcessRunner.start(script) }
    }

    @Test func exitCodeStandardErrorAndEnvironmentComeBack() throws {
        let output = try ProcessRunner.run("/bin/sh", arguments: ["-c", #"printf "$GREETING"; printf oops >&2; exit 3"#],
                                           environment: ["GREETING": "hello"])
        #expect(output.exitCode == 3 && output.signal == nil)
        #expect(output.stdoutText == "hello" && output.stderrText == "oops")
    }

    @Test func megabytesInAndOutAtOnceDoNotDeadlock() throws {
        // cat writes as it reads: neither side can finish writing unless the other keeps draining.
        let input = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let output = try ProcessRunner.run("/bin/cat", stdin: input)
        #expect(output.exitCode == 0)
        #expect(output.stdout == input)
    }

    @Test func aChildThatIgnoresItsInputDoesNotTakeTheCallerDown() throws {
        // Writing the rest of the megabyte to a pipe nobody reads raises SIGPIPE in the caller.
        let output = try ProcessRunner.run("/bin/sh", arguments: ["-c", "exec 0<&-; echo closed"],
                                           stdin: [UInt8](repeating: 0x61, count: 1 << 20))
        #expect(output.exitCode == 0 && output.stdoutText == "closed\n")
    }

    @Test func aKilledChildReportsItsSignal() throws {
        let process = try ProcessRunner.start("/bin/sleep", arguments: ["30"])
        process.kill(SIGKILL)
        let output = process.finish()
        #expect(output.signal == SIGKILL)
    }

    @Test func waitingForAQuietChildSleepsInsteadOfPolling() throws {
        // stdout closes at once, stderr only when the child exits 0.4 s later: a waiter that
        // polled on a timer would wake hundreds of times in between.
        var before = rusage(), after = rusage()
        let rusageThread: Int32 = 1  // RUSAGE_THREAD: this thread only, not the test runner's others
        getrusage(rusageThread, &before)
        let output = try ProcessRunner.run("/bin/sh", arguments: ["-c", "exec 1>&-; sleep 0.4; echo done >&2"])
        getrusage(rusageThread, &after)
        #expect(output.exitCode == 0 && output.stderrText == "done\n")
        #expect(after.ru_nvcsw - before.ru_nvcsw < 20, "\(after.ru_nvcsw - before.ru_nvcsw) wake-ups while waiting")
    }
}
