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
    let clock: any WallClock
    let logger: Logger

    private struct State {
        var list: RevocationList?
        var fetchedAt = -Double.infinity
        var lastAttempt = -Double.infinity
        var fetches = 0
    }

    private let state = Mutex(State())

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
        self.clock = clock
        self.logger = logger
    }

    /// Fetches attempted so far (tests and the bench count them).
    package var fetches: Int { state.withLock { $0.fetches } }

    /// The list to check a token against. `key`: the issuer's key for a `kid` (the verifier's JWKS cache).
    package func current(key: (String) throws(AuthError) -> JSONWebKey?) throws(AuthError) -> RevocationList {
        try state.withLock { (state) throws(AuthError) -> RevocationList in
            let now = clock.now()
            if let list = state.list, now - state.fetchedAt < settings.maximumAge { return list }
            if now - state.lastAttempt >= settings.maximumAge {
                fetch(&state, now: now, key: key)
                if let list = state.list, state.fetchedAt == now { return list }
            }
            if let list = state.list, now - state.fetchedAt < RevocationFeed.lastGoodAllowance { return list }
            throw AuthError(.jwksUnavailable, "the issuer's revocation list cannot be fetched right now")
        }
    }

    private func fetch(_ state: inout State, now: Double, key: (String) throws(AuthError) -> JSONWebKey?) {
        state.lastAttempt = now
        state.fetches += 1
        do {
            let fetched = try source.fetch()
            // A file or a proxy may end it with a newline; a JWS has no whitespace of its own.
            let bytes = fetched.document.filter { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
            let list = try RevocationDocument.parse(String(decoding: bytes, as: UTF8.self), issuer: issuer, now: Int64(now.rounded(.down)), key: key)
            // A list older than the one in hand (a stale copy from a cache between us) is no news.
            if let held = state.list, list.issuedAt < held.issuedAt { return }
            state.list = list
            state.fetchedAt = now
        } catch {
            logger.warning("revocation list fetch failed", metadata: ["location": .string(source.location),
                                                            "reason": .string(String(describing: error)),
                                                            "servingLastGood": .bool(state.list.map { _ in now - state.fetchedAt < RevocationFeed.lastGoodAllowance } ?? false)])
        }
    }
}
