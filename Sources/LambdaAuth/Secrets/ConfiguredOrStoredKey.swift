import Synchronization

/// A key that is configured (AUTH_OTP_KEY, AUTH_DATA_KEYS), or else the dev key kept in the local
/// store (`DevSecrets`), read from the table at most once per process and kept. Only a key found
/// (or created by the first issuing use) is kept: a process that looked before any existed looks
/// again. Two first uses at once both read (or race to create) the one stored key: the same value.
final class ConfiguredOrStoredKey<Key: Sendable>: Sendable {
    private let known: Mutex<Key?>
    private let stored: @Sendable (_ create: Bool) throws(AuthError) -> Key?

    init(configured: Key?, stored: @escaping @Sendable (_ create: Bool) throws(AuthError) -> Key?) {
        known = Mutex(configured)
        self.stored = stored
    }

    /// `create` only on an issuing path: a check never writes the store.
    func key(create: Bool) throws(AuthError) -> Key? {
        if let key = known.withLock({ $0 }) { return key }
        guard let key = try stored(create) else { return nil }
        known.withLock { $0 = key }
        return key
    }
}
