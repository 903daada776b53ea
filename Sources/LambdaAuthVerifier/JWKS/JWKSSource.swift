/// One successful read of a provider's JWKS document, before it is parsed.
public struct JWKSFetch: Sendable {
    public var document: [UInt8]
    /// The `Cache-Control: max-age` the server sent, in seconds; nil when it sent none.
    public var maxAge: Int64?

    public init(document: [UInt8], maxAge: Int64?) {
        self.document = document
        self.maxAge = maxAge
    }
}

/// A fetch that produced nothing usable: unreachable, timed out, a status other than 200,
/// oversized. The message says why, for the log; it never reaches a caller.
public struct JWKSFetchError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The HTTP library cannot be loaded: the machine is misconfigured, and no later fetch succeeds.
    public let libraryUnavailable: Bool
    public init(_ description: String, libraryUnavailable: Bool = false) {
        self.description = description
        self.libraryUnavailable = libraryUnavailable
    }
}

/// Where a provider's keys are read from. The cache above decides when to read.
public protocol JWKSSource: Sendable {
    /// The URL, as configured: names the disk cache file and appears in logs.
    var location: String { get }
    /// False for sources that are as cheap to read as a cache file would be.
    var worthCachingOnDisk: Bool { get }
    func fetch() throws(JWKSFetchError) -> JWKSFetch
}

/// The largest JWKS document accepted from any source (Google's is about 1.5 KiB).
let maximumJWKSBytes = 1 << 20

/// `file://PATH`: the dev identity provider, and offline tests. Read on every fetch, never cached
/// on disk (a copy of a local file in another local file buys nothing).
public struct FileJWKSSource: JWKSSource {
    public let path: String
    public var location: String { "file://" + path }
    public var worthCachingOnDisk: Bool { false }
    let maximumBytes: Int

    public init(path: String) { self.init(path: path, maximumBytes: maximumJWKSBytes) }

    /// `maximumBytes`: for documents fetched under the JWKS rules that are not key sets (the revocation list).
    public init(path: String, maximumBytes: Int) {
        self.path = path
        self.maximumBytes = maximumBytes
    }

    public func fetch() throws(JWKSFetchError) -> JWKSFetch {
        do {
            return JWKSFetch(document: try FileSystem.readFile(path, limit: maximumBytes), maxAge: nil)
        } catch {
            throw JWKSFetchError("cannot read \(location): \(error)")
        }
    }
}

/// `https://` (and `http://` to loopback) through the product's HTTP client, whose request
/// defaults are the policy: 3 s timeout, no redirects, 1 MiB at most.
public struct HTTPJWKSSource: JWKSSource {
    public let location: String
    let client: any HTTPClient
    let maximumResponseBytes: Int
    let accept: String
    public var worthCachingOnDisk: Bool { true }

    public init(url: String, client: any HTTPClient) {
        self.init(url: url, client: client, maximumResponseBytes: maximumJWKSBytes, accept: "application/json")
    }

    /// For documents fetched under the JWKS rules that are not key sets (the revocation list).
    public init(url: String, client: any HTTPClient, maximumResponseBytes: Int, accept: String) {
        location = url
        self.client = client
        self.maximumResponseBytes = maximumResponseBytes
        self.accept = accept
    }

    public func fetch() throws(JWKSFetchError) -> JWKSFetch {
        let response: HTTPResponse
        do {
            response = try client.send(HTTPRequest(url: location, headers: [("Accept", accept)],
                                                   maximumResponseBytes: maximumResponseBytes))
        } catch {
            if case .libraryUnavailable = error { throw JWKSFetchError("GET \(location): \(error)", libraryUnavailable: true) }
            throw JWKSFetchError("GET \(location): \(error)")
        }
        guard response.status == 200 else {
            throw JWKSFetchError("GET \(location): status \(response.status)")
        }
        return JWKSFetch(document: response.body, maxAge: CacheControl.maxAge(response.headers["cache-control"]))
    }
}

extension JWKSLocation {
    public func source(client: any HTTPClient) -> any JWKSSource {
        switch self {
        case .https(let url), .loopbackHTTP(let url): return HTTPJWKSSource(url: url, client: client)
        case .file(let path): return FileJWKSSource(path: path)
        }
    }
}

enum CacheControl {
    /// The `max-age` directive's seconds; nil when absent or not a plain non-negative integer.
    static func maxAge(_ header: String?) -> Int64? {
        guard let header else { return nil }
        for directive in header.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: " \t").lowercased() == "max-age" else { continue }
            var value = parts[1].trimmingCharacters(in: " \t")
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            // Anything beyond Int64 is "for ever", which the cache clamps to its ceiling anyway.
            return Int64(value) ?? Int64.max
        }
        return nil
    }
}
