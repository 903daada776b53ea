import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the disk cache keeps of one provider's keys, and what a process reads back at start.
struct JWKSCacheRecord: Sendable {
    var document: JSONValue
    var fetchedAt: Double
    /// Seconds the keys are fresh for, already clamped.
    var lifetime: Int64
    /// When any process last tried to fetch these keys (successfully or not): the refetch
    /// cooldown is shared between processes through it.
    var lastAttempt: Double
}

/// One file per provider and URL in AUTH_CACHE_DIR, written atomically (readers see the old or
/// the new file, never half of one).
///
/// A cache file decides which keys verify tokens, so it is read with suspicion: it must be a
/// regular file owned by this user and writable by no one else (a shared /tmp must not let
/// another local user plant keys), well-formed in every field, for this provider and URL, not
/// from the future, and hold at least one usable key. Anything else is ignored, as if absent.
struct DiskJWKSCache: Sendable {
    static let formatVersion = 1
    /// Clock differences between processes that a record's timestamps may show.
    static let futureTolerance = 300.0

    let path: String
    let provider: KeySetName
    let location: String

    init(directory: String, provider: KeySetName, location: String) {
        let digest = SHA256.hexDigest(of: Array(location.utf8)).prefix(16)
        path = "\(directory)/lambda-auth-jwks-\(provider.rawValue)-\(digest).json"
        self.provider = provider
        self.location = location
    }

    enum Ignored: Error, CustomStringConvertible {
        case unreadable(String)
        case untrusted(String)
        var description: String {
            switch self {
            case .unreadable(let reason), .untrusted(let reason): return reason
            }
        }
    }

    /// The record, or nil when there is no file; throws when a file exists but cannot be trusted.
    func load(now: Double, algorithms: [JWSAlgorithm]) throws(Ignored) -> (JWKSCacheRecord, JSONWebKeySet)? {
        guard let record = try loadRecord(now: now) else { return nil }
        do {
            return (record, try JSONWebKeySet(record.document, algorithms: algorithms))
        } catch {
            throw .untrusted(error.description)
        }
    }

    /// The record with its document unread (a JWKS, or a discovery document), or nil when there
    /// is no file; throws when a file exists but cannot be trusted.
    func loadRecord(now: Double) throws(Ignored) -> JWKSCacheRecord? {
        guard let bytes = try readPrivateFile() else { return nil }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw .untrusted("not valid JSON")
        }
        guard value["version"]?.int64Value == Int64(DiskJWKSCache.formatVersion),
              value["provider"]?.stringValue == provider.rawValue,
              value["location"]?.stringValue == location,
              let fetchedMillis = value["fetchedAtMs"]?.int64Value,
              let attemptMillis = value["lastAttemptMs"]?.int64Value,
              let lifetime = value["lifetime"]?.int64Value, ProviderKeyCache.lifetimeRange.contains(lifetime),
              let document = value["jwks"]
        else { throw .untrusted("missing or mistyped fields, or for another provider or URL") }
        let record = JWKSCacheRecord(document: document, fetchedAt: Double(fetchedMillis) / 1000, lifetime: lifetime,
                                     lastAttempt: Double(attemptMillis) / 1000)
        let latest = now + DiskJWKSCache.futureTolerance
        guard record.fetchedAt <= latest, record.lastAttempt <= latest, record.fetchedAt >= 0 else {
            throw .untrusted("timestamps in the future")
        }
        return record
    }

    func store(_ record: JWKSCacheRecord) throws(FileSystem.Failure) {
        let value: JSONValue = [
            "version": .number(DiskJWKSCache.formatVersion),
            "provider": .string(provider.rawValue),
            "location": .string(location),
            "fetchedAtMs": .number(Int64(record.fetchedAt * 1000)),
            "lastAttemptMs": .number(Int64(record.lastAttempt * 1000)),
            "lifetime": .number(record.lifetime),
            "jwks": record.document,
        ]
        try FileSystem.createDirectory(FileSystem.parentDirectory(of: path))
        // Not fsynced: losing a cache file to a crash costs one fetch.
        try FileSystem.writeAtomically(path, value.serializedBytes(), mode: 0o600, durable: false)
    }

    /// Reads the file through one descriptor after checking, on that same descriptor, who owns it.
    private func readPrivateFile() throws(Ignored) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw .unreadable("open: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadable("fstat failed") }
        guard status.st_mode & S_IFMT == S_IFREG, status.st_uid == geteuid(), status.st_mode & 0o022 == 0 else {
            throw .untrusted("not a regular file owned by this user and private to it")
        }
        guard status.st_size <= 2 * maximumJWKSBytes else { throw .untrusted("too large") }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .unreadable("short read") }
            offset += count
        }
        return bytes
    }
}
