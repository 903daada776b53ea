/// Where a provider's keys come from: `https://` (production), `file://` (offline and tests), or
/// `http://` to a loopback address only (local servers in tests; never plain HTTP across a network).
public enum JWKSLocation: Sendable, Equatable {
    case https(String)
    case loopbackHTTP(String)
    case file(path: String)

    public init(_ url: String, variable: String) throws(AuthError) {
        if url.hasPrefix("https://"), url.count > "https://".count {
            self = .https(url)
        } else if url.hasPrefix("file://"), url.count > "file://".count {
            self = .file(path: String(url.dropFirst("file://".count)))
        } else if url.hasPrefix("http://") {
            guard JWKSLocation.isLoopback(url) else {
                throw AuthError(.configError, "\(variable) may use http:// only for a loopback address")
            }
            self = .loopbackHTTP(url)
        } else {
            throw AuthError(.configError, "\(variable) must be an https://, file:// or loopback http:// URL")
        }
    }

    public static func validate(_ url: String, variable: String) throws(AuthError) {
        _ = try JWKSLocation(url, variable: variable)
    }

    package static func isLoopback(_ url: String) -> Bool {
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if authority.contains(text: "@") { return false }
        var host = Substring(authority)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            host = host[host.index(after: host.startIndex)..<close]
            return host == "::1"
        }
        if let colon = host.firstIndex(of: ":") { host = host[..<colon] }
        if host == "localhost" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return false }
        return octets[0] == "127"
    }
}
