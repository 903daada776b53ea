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

    /// `Tests/Scripts/NAME`: the Python peers and helper scripts beside this package's tests.
    public static func scriptPath(_ name: String) -> String {
        // Tests/LambdaAuthTestSupport/TestSupport.swift → Tests/Scripts/NAME
        FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: "\(#filePath)")) + "/Scripts/" + name
    }
}
