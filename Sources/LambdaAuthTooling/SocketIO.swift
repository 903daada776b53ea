import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

/// Blocking reads and writes on a connected socket, shared by the loopback test server and serve's listener.
enum SocketIO {
    /// False when the peer closed, or nothing came before `deadline` (monotonic seconds; nil: none).
    static func receive(_ connection: Int32, into buffer: inout [UInt8], deadline: Double? = nil) -> Bool {
        if let deadline {
            var descriptor = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            while true {
                let remaining = deadline - monotonicSeconds()
                guard remaining > 0 else { return false }
                let ready = poll(&descriptor, 1, Int32(min(remaining * 1000 + 1, 3_600_000)))
                if ready < 0, errno == EINTR { continue }
                guard ready > 0 else { return false }
                break
            }
        }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
    }

    static func sendAll(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { send(connection, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

}
