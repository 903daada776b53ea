import Logging
import Synchronization

/// Where and how often `AccessTokenVerifier` reads the issuer's revocation list.
public struct RevocationFeedSettings: Sendable {
    /// `https://`, `file://` or loopback `http://`; by default `<issuer>/.well-known/revocations`.
    public var url: String
    /// Seconds a fetched list is used before the next verification fetches again (default 5, the
    /// `max-age` it is served with): a revocation reaches this process within that many seconds.
    public var maximumAge: Double

    public init(url: String, maximumAge: Double = Double(RevocationDocument.maximumAge)) {
        self.url = url
        self.maximumAge = maximumAge
    }

    /// The list `well-known` publishes beside the JWKS.
    public init(issuer: String, maximumAge: Double = Double(RevocationDocument.maximumAge)) {
        self.init(url: (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/revocations", maximumAge: maximumAge)
    }
}

/// The revocation list as one process sees it (contract section 20), fetched the way the JWKS
/// cache fetches keys:
/// - one fetch per `maximumAge` per process, the lock held across it, so concurrent verifications
///   of a stale list wait for one fetch instead of each starting their own;
/// - a failed fetch (unreachable, not 200, a list that does not verify or has expired) is retried
///   no sooner than `maximumAge` later, and meanwhile the last good list serves, for at most
///   `lastGoodAllowance` seconds past its fetch; after that every token is refused (503), since
///   accepting them would silently drop the promise that a sign-out ends them.
package final class RevocationFeed: Sendable {
    /// How long the last good list keeps serving while fetches fail.
    package static let lastGoodAllowance = 60.0

    let settings: RevocationFeedSettings
    let issuer: String
    let source: any JWKSSource
    let logger: Logger
    private let list: PeriodicValue<RevocationList>

    package init(settings: RevocationFeedSettings, issuer: String, httpClient: any HTTPClient, clock: any WallClock, logger: Logger) throws(AuthError) {
        guard settings.maximumAge > 0, settings.maximumAge <= RevocationFeed.lastGoodAllowance else {
            throw AuthError(.configError, "the revocation feed's maximum age must be above 0 and at most 60 seconds")
        }
        let location = try JWKSLocation(settings.url, variable: "revocations.url")
        self.settings = settings
        self.issuer = issuer
        // The list is no key set, but it is fetched under the same rules: 3 s, no redirects.
        switch location {
        case .https(let url), .loopbackHTTP(let url): source = HTTPJWKSSource(url: url, client: httpClient, maximumResponseBytes: RevocationDocument.maximumBytes,
                                                                         accept: "application/jwt")
        case .file(let path): source = FileJWKSSource(path: path, maximumBytes: RevocationDocument.maximumBytes)
        }
        self.logger = logger
        list = PeriodicValue(maximumAge: settings.maximumAge, lastGoodAllowance: RevocationFeed.lastGoodAllowance, clock: clock)
    }

    /// Fetches attempted so far (tests and the bench count them).
    package var fetches: Int { list.reads }

    /// The list to check a token against. `key`: the issuer's key for a `kid` (the verifier's JWKS cache).
    package func current(key: (String) throws(AuthError) -> JSONWebKey?) throws(AuthError) -> RevocationList {
        try list.current { (held, now) throws(AuthError) -> RevocationList in
            do throws(AuthError) {
                let fetched: JWKSFetch
                do {
                    fetched = try source.fetch()
                } catch {
                    throw AuthError(.jwksUnavailable, "the issuer's revocation list cannot be fetched right now", detail: String(describing: error))
                }
                // A file or a proxy may end it with a newline; a JWS has no whitespace of its own.
                let bytes = fetched.document.filter { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
                let list = try RevocationDocument.parse(String(decoding: bytes, as: UTF8.self), issuer: issuer,
                                                        now: Int64(now.rounded(.down)), key: key)
                // Older than the one in hand (a stale copy from a cache between us): no news, a failed fetch.
                if let held, list.issuedAt < held.issuedAt { throw AuthError(.jwksUnavailable, "the revocation list served is older than the one held") }
                return list
            } catch {
                logger.warning("revocation list fetch failed", metadata: ["location": .string(source.location),
                                                                "reason": .string(error.detail ?? error.message),
                                                                "servingLastGood": .bool(held != nil)])
                // Whatever was wrong with the list (unparsable, too long), the token is not: the
                // caller hears that the issuer's documents are unavailable, never MALFORMED_TOKEN.
                guard error.code == .jwksUnavailable else {
                    throw AuthError(.jwksUnavailable, "the issuer's revocation list is unusable", detail: error.message)
                }
                throw error
            }
        }
    }
}

/// A value read again at most once per `maximumAge`, by whichever caller finds it stale; the lock
/// is held across the read, so concurrent callers share one. A failed read is not retried
/// before `maximumAge` has passed again; meanwhile, and for at most `lastGoodAllowance` past its
/// read, the last good value serves; after that the failure is thrown. The verifier's revocation
/// feed and the authorizer's list from the table are both this.
package final class PeriodicValue<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var readAt = -Double.infinity
        var lastAttempt = -Double.infinity
        var lastFailure: AuthError?
        var reads = 0
    }

    let maximumAge: Double
    let lastGoodAllowance: Double
    let clock: any WallClock
    private let state: Mutex<State>

    package init(maximumAge: Double, lastGoodAllowance: Double, clock: any WallClock) {
        self.maximumAge = maximumAge
        self.lastGoodAllowance = lastGoodAllowance
        self.clock = clock
        state = Mutex(State())
    }

    /// Reads attempted so far.
    package var reads: Int { state.withLock { $0.reads } }

    /// `read` gets the value held (nil: none yet) and the time of the read.
    package func current(_ read: (Value?, Double) throws(AuthError) -> Value) throws(AuthError) -> Value {
        try state.withLock { (state) throws(AuthError) -> Value in
            let now = clock.now()
            if let value = state.value, now - state.readAt < maximumAge { return value }
            if now - state.lastAttempt >= maximumAge {
                state.lastAttempt = now
                state.reads += 1
                do throws(AuthError) {
                    let value = try read(state.value, now)
                    state.value = value
                    state.readAt = now
                    state.lastFailure = nil
                    return value
                } catch {
                    state.lastFailure = error
                }
            }
            if let value = state.value, now - state.readAt < lastGoodAllowance { return value }
            throw state.lastFailure ?? AuthError(.jwksUnavailable, "no good value to serve")
        }
    }
}
