import LambdaAuth
import LambdaAuthTooling

/// Helpers shared by every test.
public enum TestSupport {
    /// A fresh private directory under the system temporary directory.
    public static func temporaryDirectory(_ prefix: String = "lambda-auth-test") -> String {
        do {
            return try FileSystem.makeTemporaryDirectory(prefix: prefix)
        } catch {
            fatalError("cannot create a temporary directory: \(error)")
        }
    }

    public static func removeTree(_ path: String) {
        FileSystem.removeTree(path)
    }

    /// The package's root directory (where Package.swift, README.md and Infra/ are).
    public static var packageRoot: String {
        // Tests/LambdaAuthTestSupport/TestSupport.swift → the root
        FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: "\(#filePath)")))
    }

    /// Runs `python3 Tests/Scripts/SCRIPT ARGUMENTS…` and returns its JSON output; a missing
    /// interpreter or package fails the calling test (prerequisites.sh installs them), never skips it.
    public static func pythonPeer(_ script: String, _ arguments: [String], environment: [String: String] = [:]) throws -> JSONValue {
        let output = try ProcessRunner.run("/usr/bin/env", arguments: ["python3", scriptPath(script)] + arguments,
                                           environment: environment.isEmpty ? Environment.current() : environment)
        guard output.exitCode == 0, let json = output.json else {
            throw PeerFailure(description: "python3 \(script) exited \(output.exitCode): \(output.stdoutText.suffix(1000)) \(output.stderrText.suffix(2000))")
        }
        return json
    }

    public struct PeerFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `Tests/Scripts/NAME`: the Python peers and helper scripts beside this package's tests.
    public static func scriptPath(_ name: String) -> String {
        // Tests/LambdaAuthTestSupport/TestSupport.swift → Tests/Scripts/NAME
        FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: "\(#filePath)")) + "/Scripts/" + name
    }
}
