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
}
