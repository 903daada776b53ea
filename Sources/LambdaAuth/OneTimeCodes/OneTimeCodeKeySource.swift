import Crypto
import Logging
import Synchronization

/// The HMAC key of the codes' hashes: AUTH_OTP_KEY, or else the dev key kept in the local store,
/// read from the table at most once per process and kept. Only a key found (or created by the
/// first code issued) is kept: a process that looked before any code existed looks again.
final class OneTimeCodeKeySource: Sendable {
    let table: any Table
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    private let known: Mutex<SymmetricKey?>

    init(configured: [UInt8]?, table: any Table, clock: any WallClock, random: any RandomSource, logger: Logger) {
        self.table = table
        self.clock = clock
        self.random = random
        self.logger = logger
        known = Mutex(configured.map { SymmetricKey(data: $0) })
    }

    /// `create` only on the issuing path: a verification never writes the store.
    func key(create: Bool) throws(AuthError) -> SymmetricKey? {
        if let key = known.withLock({ $0 }) { return key }
        // Two first uses at once both read (or race to create) the one stored key: the same value.
        guard let bytes = try DevSecrets.oneTimeCodeKey(in: table, create: create, now: clock.nowSeconds, random: random, logger: logger) else {
            return nil
        }
        let key = SymmetricKey(data: bytes)
        known.withLock { $0 = key }
        return key
    }
}
