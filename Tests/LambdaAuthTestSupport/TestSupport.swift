import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

/// Helpers shared by every test: temporary directories, and the paths of the built executables.
public enum TestSupport {
    /// A fresh private directory under the system temporary directory.
    public static func temporaryDirectory(_ prefix: String = "lambda-auth-test") -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { buffer -> String in
            guard let result = mkdtemp(buffer.baseAddress!) else { fatalError("mkdtemp failed") }
            return String(cString: result)
        }
        return path
    }

    public static func removeTree(_ path: String) {
        guard path.hasPrefix("/tmp/") else { return }
        _ = system("rm -rf '\(path)'")
    }
}
