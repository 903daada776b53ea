import LambdaAuthVerifier
#if canImport(Glibc)
import Glibc
#endif

/// flock(2) on `<store>/LOCK`: shared for reads, exclusive for writes, across processes. The
/// lock dies with its process, so a kill -9 never leaves the store locked.
struct StoreLock {
    static let maximumWait = 2.0

    private let descriptor: Int32

    /// Writers create the store (`creating` defaults to `exclusive`). nil for a reader when the
    /// store has never been written (no LOCK file): there is nothing to read, and a read must not
    /// create anything. Nor must maintenance (`creating: false`): its store may have been removed
    /// since a write marked it due.
    static func acquire(_ layout: StoreLayout, exclusive: Bool, creating: Bool? = nil) throws(TableError) -> StoreLock? {
        let descriptor: Int32
        if creating ?? exclusive {
            do throws(FileSystem.Failure) {
                try FileSystem.createDirectory(layout.root)
            } catch {
                throw .unavailable(error.description)
            }
            descriptor = open(layout.lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        } else {
            descriptor = open(layout.lockPath, O_RDONLY | O_CLOEXEC)
            if descriptor < 0, errno == ENOENT || errno == ENOTDIR { return nil }
        }
        guard descriptor >= 0 else {
            throw .unavailable(FileSystem.Failure(path: layout.lockPath, operation: "open", errno: errno).description)
        }
        let operation = exclusive ? LOCK_EX : LOCK_SH
        let deadline = monotonicSeconds() + maximumWait
        var pause: UInt32 = 50
        while flock(descriptor, operation | LOCK_NB) != 0 {
            let failure = errno
            guard failure == EWOULDBLOCK || failure == EINTR else {
                close(descriptor)
                throw .unavailable(FileSystem.Failure(path: layout.lockPath, operation: "flock", errno: failure).description)
            }
            if monotonicSeconds() >= deadline {
                close(descriptor)
                throw .unavailable("the store lock \(layout.lockPath) was not granted within \(Int(maximumWait)) s")
            }
            usleep(pause)
            pause = min(pause * 2, 2_000)
        }
        return StoreLock(descriptor: descriptor)
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
