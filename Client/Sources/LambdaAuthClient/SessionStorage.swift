import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the client keeps its session between launches. The refresh token is the user's whole
/// sign-in: keep it where only the app can read it.
public protocol SessionStorage: Sendable {
    func load() throws -> StoredSession?
    /// nil removes it (signed out). `AuthClient` saves only inside `exclusively`.
    func save(_ session: StoredSession?) throws
    /// Runs `body` while no other client of the same storage runs its own (an app and its
    /// extension sharing one file): each refresh then sees the token the other one stored, and
    /// none presents a token the other already used.
    func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T
}

extension SessionStorage {
    public func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T { try await body() }
}

/// In memory only: the user signs in again at every launch. For tests and for apps that want that.
public final class InMemorySessionStorage: SessionStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: StoredSession?

    public init(_ session: StoredSession? = nil) { stored = session }

    public func load() throws -> StoredSession? { lock.withLock { stored } }
    public func save(_ session: StoredSession?) throws { lock.withLock { stored = session } }
}

/// A file readable by its owner only (0600), replaced atomically (written beside it, synced,
/// renamed over it, the directory synced): a crash leaves the old session or the new one, never
/// half of either. Clients in several processes sharing the file take turns through a lock file.
public struct FileSessionStorage: SessionStorage {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws -> StoredSession? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try JSONDecoder().decode(StoredSession.self, from: data)
    }

    public func save(_ session: StoredSession?) throws {
        guard let session else {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try syncDirectory()
            return
        }
        let data = try JSONEncoder().encode(session)
        // A name no other writer has, not `.tmp-<pid>`: two clients in one process (an app and
        // its widget) sharing the file would write one temporary file together, and one's rename
        // would move the other's half-written session into place. mkstemp makes it 0600.
        var template = Array((path + ".tmp-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw posixError("open") }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let written = data.withUnsafeBytes { buffer in write(descriptor, buffer.baseAddress, buffer.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == data.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw posixError("write")
        }
        try syncDirectory()
    }

    public func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let descriptor = open(path + ".lock", O_RDWR | O_CREAT, 0o600)
        guard descriptor >= 0 else { throw posixError("open the lock file") }
        defer { close(descriptor) }
        // Non-blocking attempts: a blocked flock would hold one of Swift's cooperative threads.
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw posixError("lock") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        defer { flock(descriptor, LOCK_UN) }
        return try await body()
    }

    private func syncDirectory() throws {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    private func posixError(_ operation: String) -> NSError {
        NSError(domain: NSPOSIXErrorDomain, code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "\(operation) \(path) failed"])
    }
}

#if canImport(Security)
import Security

/// The Keychain (Apple platforms only: this type is compiled there and nowhere else): a generic
/// password item readable after the first unlock, on this device only (never in a backup that
/// another device restores).
public struct KeychainSessionStorage: SessionStorage {
    public let service: String
    public let account: String

    public init(service: String, account: String = "session") {
        self.service = service
        self.account = account
    }

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func load() throws -> StoredSession? {
        var search = query
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw keychainError(status) }
        return try JSONDecoder().decode(StoredSession.self, from: data)
    }

    public func save(_ session: StoredSession?) throws {
        guard let session else {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw keychainError(status) }
            return
        }
        let data = try JSONEncoder().encode(session)
        let update: [String: Any] = [kSecValueData as String: data,
                                     kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        var status = SecItemUpdate(query as CFDictionary, update as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(query.merging(update) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw keychainError(status) }
    }

    private func keychainError(_ status: OSStatus) -> NSError {
        NSError(domain: NSOSStatusErrorDomain, code: Int(status))
    }
}
#endif
