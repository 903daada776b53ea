/// A web origin as a browser serializes it (RFC 6454 section 6.1, the `Origin` header):
/// `http` or `https`, `://`, a lowercase host (name, IPv4 or bracketed IPv6), an optional port,
/// nothing else. CORS reflects only such text (a reflected `null`, or raw bytes such as a bare LF,
/// would grant a sandboxed page or split the answer's head), and the passkey and CORS settings are
/// checked with it.
public struct WebOrigin: Sendable, Equatable {
    public let scheme: String
    public let host: String
    public let port: Int?

    public init?(serialized text: String) {
        let bytes = Array(text.utf8)
        guard let separator = text.firstRange(ofText: "://") else { return nil }
        let scheme = String(text[..<separator.lowerBound])
        guard scheme == "http" || scheme == "https" else { return nil }
        var authority = Substring(text[separator.upperBound...])
        guard bytes.count <= 2048, !authority.isEmpty else { return nil }
        var port: Int?
        let host: Substring
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[...close]
            authority = authority[authority.index(after: close)...]
            guard host.dropFirst().dropLast().utf8.allSatisfy({ WebOrigin.isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                  host.count > 2 else { return nil }
        } else {
            host = authority.prefix { $0 != ":" }
            authority = authority[host.endIndex...]
            // Lowercase LDH labels: a browser lowercases (and punycodes) the host it sends.
            guard !host.isEmpty, host.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 46 }),
                  !host.hasPrefix("."), !host.hasSuffix("."), !host.contains(text: "..") else { return nil }
        }
        if !authority.isEmpty {
            let digits = authority.dropFirst()
            guard authority.first == ":", !digits.isEmpty, digits.count <= 5, digits.first != "0",
                  digits.utf8.allSatisfy({ (48...57).contains($0) }), let number = Int(digits), number <= 65535 else { return nil }
            port = number
        }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
    }

    /// `localhost` itself, at any port: the one host where browsers treat `http` as secure.
    public var isLocalhost: Bool { host == "localhost" }

    private static func isHex(_ byte: UInt8) -> Bool { (48...57).contains(byte) || (97...102).contains(byte) }
}
