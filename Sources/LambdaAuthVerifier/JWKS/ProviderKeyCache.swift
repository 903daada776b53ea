import Logging
import Synchronization

/// One provider's verification keys: parsed once and kept in memory for a resident process,
/// mirrored on disk (for HTTP sources) so that the next process starts warm.
///
/// Policy:
/// - keys are fresh for the server's `Cache-Control: max-age` (3600 s when absent), clamped to
///   60 s – 24 h; stale keys are refetched on the next verification;
/// - a `kid` not among fresh keys triggers one refetch, unless any fetch was attempted in the
///   last 30 s — by this process or, through the disk record, by another one — so a storm of
///   forged `kid`s costs at most one fetch per 30 s;
/// - a failed fetch keeps whatever keys we have and serves them past their age, for 24 h at most
///   (a provider that revoked a key during a long outage must not see it accepted for months);
///   the failed attempt also starts the 30 s cooldown, so an outage does not cost every request a
///   3 s timeout; with no keys, or only keys past that, JWKS_UNAVAILABLE;
/// - a response that is not a usable JWKS is a failed fetch, so it never replaces working keys.
///
/// The lock is held across a fetch: concurrent verifications of a cold or stale provider wait for
/// one fetch instead of each starting their own.
package final class ProviderKeyCache: Sendable {
    static let defaultLifetime: Int64 = 3600
    static let lifetimeRange: ClosedRange<Int64> = 60...86_400
    static let refetchCooldown = 30.0
    /// How long past their freshness cached keys still serve while fetches fail.
    static let outageAllowance: Int64 = 86_400

    let provider: KeySetName
    let algorithms: [JWSAlgorithm]
    let source: any JWKSSource
    let disk: DiskJWKSCache?
    let clock: any WallClock
    let logger: Logger

    private struct State {
        var record: JWKSCacheRecord?
        var keys: JSONWebKeySet?
        var lastAttempt = -Double.infinity
    }

    private let state = Mutex(State())

    package init(provider: KeySetName, algorithms: [JWSAlgorithm] = [.rs256], source: any JWKSSource, cacheDirectory: String?,
         clock: any WallClock, logger: Logger) {
        self.provider = provider
        self.algorithms = algorithms
        self.source = source
        self.clock = clock
        self.logger = logger
        if let cacheDirectory, source.worthCachingOnDisk {
            disk = DiskJWKSCache(directory: cacheDirectory, provider: provider, location: source.location)
        } else {
            disk = nil
        }
    }

    static func lifetime(maxAge: Int64?) -> Int64 {
        min(max(maxAge ?? defaultLifetime, lifetimeRange.lowerBound), lifetimeRange.upperBound)
    }

    /// The key named `keyID`, fetching as the policy above allows.
    package func key(id keyID: String) throws(AuthError) -> JSONWebKey {
        try state.withLock { (state) throws(AuthError) -> JSONWebKey in
            let now = clock.now()
            if isFresh(state, now), let key = state.keys?.key(id: keyID) { return key }

            // Slow path: no keys, stale keys or an unknown kid. Another process may have fetched
            // meanwhile; its file is cheaper than a fetch.
            adoptDiskRecord(&state, now: now)
            if isFresh(state, now), let key = state.keys?.key(id: keyID) { return key }

            var fetchFailed = false
            if state.keys == nil || cooldownOver(state, now) {
                fetchFailed = try !fetch(&state, now: now)
            }
            let servable = servesThroughOutage(state, now)
            if servable, let key = state.keys?.key(id: keyID) { return key }
            if state.keys == nil || fetchFailed || !servable {
                throw AuthError(.jwksUnavailable, "the \(provider.rawValue) signing keys cannot be fetched right now")
            }
            throw AuthError(.unknownKeyID, "the token's kid is not among the \(provider.rawValue) signing keys")
        }
    }

    private func isFresh(_ state: State, _ now: Double) -> Bool {
        guard let record = state.record else { return false }
        return now - record.fetchedAt < Double(record.lifetime)
    }

    private func servesThroughOutage(_ state: State, _ now: Double) -> Bool {
        guard let record = state.record else { return false }
        return now - record.fetchedAt < Double(record.lifetime + ProviderKeyCache.outageAllowance)
    }

    private func cooldownOver(_ state: State, _ now: Double) -> Bool {
        now - state.lastAttempt >= ProviderKeyCache.refetchCooldown
    }

    private func adoptDiskRecord(_ state: inout State, now: Double) {
        guard let disk else { return }
        do {
            guard let (stored, storedKeys) = try disk.load(now: now, algorithms: algorithms) else { return }
            state.lastAttempt = max(state.lastAttempt, stored.lastAttempt)
            if stored.fetchedAt > (state.record?.fetchedAt ?? -Double.infinity) {
                state.record = stored
                state.keys = storedKeys
            }
        } catch {
            logger.warning("ignoring the JWKS cache file", metadata: ["provider": .string(provider.rawValue),
                                                            "path": .string(disk.path), "reason": .string(error.description)])
        }
    }

    /// One fetch; true when it produced a usable key set. Either way the attempt is recorded. A
    /// missing HTTP library is CONFIG_ERROR, as on every other path that needs it: no retry of
    /// the caller's fixes the machine, and cached keys would only hide it until they run out.
    private func fetch(_ state: inout State, now: Double) throws(AuthError) -> Bool {
        state.lastAttempt = now
        defer { persist(&state) }
        let fetched: JWKSFetch
        let document: JSONValue
        let parsed: JSONWebKeySet
        do {
            fetched = try source.fetch()
            document = try JSONValue.parse(fetched.document)
            parsed = try JSONWebKeySet(document, algorithms: algorithms)
        } catch {
            if let failure = error as? JWKSFetchError, failure.libraryUnavailable {
                throw AuthError(.configError, "the \(provider.rawValue) signing keys cannot be fetched: \(failure.description)")
            }
            logger.warning("JWKS fetch failed", metadata: ["provider": .string(provider.rawValue), "location": .string(source.location),
                                                 "reason": .string(String(describing: error)),
                                                 "servingCachedKeys": .bool(state.keys != nil)])
            return false
        }
        let record = JWKSCacheRecord(document: document, fetchedAt: now,
                                     lifetime: ProviderKeyCache.lifetime(maxAge: fetched.maxAge), lastAttempt: now)
        state.record = record
        state.keys = parsed
        logger.info("JWKS fetched", metadata: ["provider": .string(provider.rawValue), "keys": .number(parsed.keys.count),
                                     "ignoredKeys": .number(parsed.ignoredCount),
                                     "lifetimeSeconds": .number(record.lifetime)])
        return true
    }

    private func persist(_ state: inout State) {
        guard let disk, var record = state.record else { return }
        record.lastAttempt = state.lastAttempt
        state.record = record
        do {
            try disk.store(record)
        } catch {
            logger.warning("cannot write the JWKS cache file", metadata: ["path": .string(disk.path), "reason": .string(error.description)])
        }
    }
}
