#if canImport(Glibc)
import Glibc
#endif

/// The listening socket and accept loop that serve's listener and the loopback test server share;
/// what each does with a connection, and how it stops, stays its own.
enum TCPListener {
    struct Failure: Error {
        /// `socket`, or `bind/listen`.
        let operation: String
        let errno: Int32
    }

    /// A close-on-exec IPv4 socket listening on `address` and `port` (0: one the system chooses),
    /// and the port it got.
    static func listen(on address: in_addr, port: UInt16) throws(Failure) -> (descriptor: Int32, port: UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(operation: "socket", errno: errno) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        socketAddress.sin_addr = address
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(descriptor, 128) == 0 else {
            let failure = Failure(operation: "bind/listen", errno: errno)
            close(descriptor)
            throw failure
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, UInt16(bigEndian: socketAddress.sin_port))
    }

    /// Hands each connection (close-on-exec) to `take` until accept fails with an errno that
    /// `retrying` does not forgive (the listener was shut down) or `take` answers false.
    static func acceptConnections(_ listener: Int32, retrying: (Int32) -> Bool, take: (Int32) -> Bool) {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if retrying(errno) { continue }
                return
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            guard take(connection) else { return }
        }
    }
}
