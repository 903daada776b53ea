import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

/// Throwaway directories for the tools and tests (a demo or replay world, a test store); no handler
/// needs them.
extension FileSystem {
    /// A new private directory under $TMPDIR (or /tmp).
    public static func makeTemporaryDirectory(prefix: String = "lambda-auth") throws(Failure) -> String {
        let base = Environment.current()["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let result = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: result)
        }
        guard let path else { throw Failure(path: base, operation: "mkdtemp", errno: errno) }
        return path
    }

    /// Removes a file or a directory tree; a missing path is not an error.
    public static func removeTree(_ path: String) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        if status.st_mode & S_IFMT == S_IFDIR {
            for name in (try? listDirectory(path)) ?? [] { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
