import LambdaAuthTables
#if canImport(Glibc)
import Glibc
#endif

/// How long a local store's log is: the end of its last record (0 with no log). The file keeps
/// the length it reached, for later commits to write over, so its size says nothing of this.
/// For the store's tests and the runtime loop's (which checkpoints after a response).
package func logLength(ofStoreAt directory: String) -> Int {
    let path = directory + "/wal"
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return 0 }
    defer { close(descriptor) }
    return (try? WriteAheadLog.read(descriptor, path: path, cached: nil).validEnd) ?? -1
}
