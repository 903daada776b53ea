import Synchronization

/// The keys of an OpenID Connect provider configured without `jwksUri` (contract section 14): its
/// discovery document (OpenID Connect Discovery 1.0) names the JWKS URL, and that URL is fetched.
///
/// The discovery document is fetched once and cached like a JWKS: in memory, and on disk beside
/// the JWKS files, fresh for its `max-age` (3600 s when absent, clamped to 60 s – 24 h). A stale
/// copy is refetched the next time the keys are; when that fails, the stale copy still names the
/// JWKS (an outage of the discovery endpoint alone does not stop sign-ins). The document's
/// `issuer` must equal the configured one (Discovery §4.3): a document naming another issuer is a
/// failed fetch, never used, whose reason the key cache logs.
package final class DiscoveryJWKSSource: JWKSSource {
    package let issuer: String
    /// The discovery document's URL: it names this source's JWKS cache file and appears in logs.
    package let location: String
    package var worthCachingOnDisk: Bool { true }
    let client: any HTTPClient
    let disk: DiskJWKSCache?
    let clock: any WallClock
    private let discovered = Mutex<JWKSCacheRecord?>(nil)

    package init(issuer: String, discoveryURL: String, provider: KeySetName, client: any HTTPClient,
                 cacheDirectory: String?, clock: any WallClock) {
        self.issuer = issuer
        location = discoveryURL
        self.client = client
        self.clock = clock
        // Its own name: the provider's JWKS file is keyed by the same URL. A dot cannot appear
        // in a provider's name, so no provider's files collide with these.
        disk = cacheDirectory.map { DiskJWKSCache(directory: $0, provider: KeySetName(provider.rawValue + ".discovery"), location: discoveryURL) }
    }

    package func fetch() throws(JWKSFetchError) -> JWKSFetch {
        try HTTPJWKSSource(url: jwksURI(), client: client).fetch()
    }

    /// The JWKS URL from a fresh copy of the discovery document, fetching one when there is none.
    package func jwksURI() throws(JWKSFetchError) -> String {
        try discovered.withLock { (record) throws(JWKSFetchError) -> String in
            let now = clock.now()
            if record == nil, let disk {
                // A file that cannot be trusted is as good as none: the document is fetched again.
                record = try? disk.loadRecord(now: now)
            }
            var stale: String?
            if let current = record {
                let uri = try? jwksURI(in: current.document)
                if let uri, now - current.fetchedAt < Double(current.lifetime) { return uri }
                stale = uri
            }
            let fetched: JWKSFetch
            do {
                fetched = try HTTPJWKSSource(url: location, client: client).fetch()
            } catch {
                if let stale { return stale }
                throw JWKSFetchError("discovery: \(error)")
            }
            let document: JSONValue
            do {
                document = try JSONValue.parse(fetched.document)
            } catch {
                throw JWKSFetchError("discovery: \(location) is not valid JSON (\(error))")
            }
            let uri = try jwksURI(in: document)
            let fresh = JWKSCacheRecord(document: ["issuer": .string(issuer), "jwks_uri": .string(uri)], fetchedAt: now,
                                        lifetime: ProviderKeyCache.lifetime(maxAge: fetched.maxAge), lastAttempt: now)
            record = fresh
            // Losing the file costs one more discovery fetch in the next process, nothing else.
            try? disk?.store(fresh)
            return uri
        }
    }

    /// The document's `jwks_uri`, once its `issuer` is ours; an https URL, or http to loopback.
    func jwksURI(in document: JSONValue) throws(JWKSFetchError) -> String {
        guard let named = document["issuer"]?.stringValue, named == issuer else {
            let shown = document["issuer"]?.stringValue.map { "\"\($0)\"" } ?? "no issuer"
            throw JWKSFetchError("discovery: \(location) names \(shown), not the configured issuer \"\(issuer)\"")
        }
        guard let uri = document["jwks_uri"]?.stringValue,
              uri.hasPrefix("https://") && uri.count > "https://".count || uri.hasPrefix("http://") && JWKSLocation.isLoopback(uri)
        else {
            throw JWKSFetchError("discovery: \(location) has no https:// jwks_uri")
        }
        return uri
    }
}
