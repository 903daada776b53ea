#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Minimal POSIX file helpers. FoundationEssentials has FileManager, but the store and the caches
/// need exact control over fsync, O_EXCL and rename, so everything file-related goes through here.
public enum FileSystem {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let operation: String
        public let errno: Int32
        public var description: String {
            "\(operation) \(path): \(String(cString: strerror(errno)))"
        }
        public var isNotFound: Bool { errno == ENOENT }

        public init(path: String, operation: String, errno: Int32) {
            self.path = path
            self.operation = operation
            self.errno = errno
        }
    }

    public static func readFile(_ path: String, limit: Int = 64 << 20) throws(Failure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(path: path, operation: "open", errno: errno) }
        defer { close(descriptor) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(path: path, operation: "read", errno: errno)
            }
            if count == 0 { break }
            output.append(contentsOf: chunk[0..<count])
            if output.count > limit { throw Failure(path: path, operation: "read (too large)", errno: EFBIG) }
        }
        return output
    }

    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Creates a directory and its parents (mode 0700: stores and caches hold private data).
    public static func createDirectory(_ path: String, mode: mode_t = 0o700) throws(Failure) {
        if path.isEmpty || exists(path) { return }
        let parent = parentDirectory(of: path)
        if parent != path, !parent.isEmpty { try createDirectory(parent, mode: mode) }
        if mkdir(path, mode) != 0, errno != EEXIST {
            throw Failure(path: path, operation: "mkdir", errno: errno)
        }
    }

    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Writes a file so that readers see the old or the new content, never a mix: a temporary file
    /// in the same directory, fsync, rename, and (when `durable`) fsync of the directory.
    public static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600,
                                       durable: Bool = true) throws(Failure) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw Failure(path: temporary, operation: "open", errno: errno) }
        do throws(Failure) {
            try writeAll(descriptor, bytes, path: temporary)
            if durable, fsync(descriptor) != 0 { throw Failure(path: temporary, operation: "fsync", errno: errno) }
            close(descriptor)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        if rename(temporary, path) != 0 {
            let failure = Failure(path: path, operation: "rename", errno: errno)
            unlink(temporary)
            throw failure
        }
        if durable { try syncDirectory(parentDirectory(of: path)) }
    }

    public static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(path: path, operation: "write", errno: errno)
            }
            offset += written
        }
    }

    public static func syncDirectory(_ path: String) throws(Failure) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(path: path, operation: "open", errno: errno) }
        defer { close(descriptor) }
        if fsync(descriptor) != 0 { throw Failure(path: path, operation: "fsync", errno: errno) }
    }

    /// Names in a directory (no `.`/`..`); empty when it does not exist.
    public static func listDirectory(_ path: String) throws(Failure) -> [String] {
        guard let directory = opendir(path) else {
            if errno == ENOENT { return [] }
            throw Failure(path: path, operation: "opendir", errno: errno)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
