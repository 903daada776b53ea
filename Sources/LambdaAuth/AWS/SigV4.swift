import Crypto

/// AWS Signature Version 4 (header form), for the DynamoDB and STS clients and for verifying
/// requests signed with locally minted credentials.
///
/// The rules follow AWS's documentation, cross-checked byte for byte against botocore by
/// SigV4Tests: non-S3 services normalise the path (dot segments, repeated slashes) and
/// percent-encode the already-encoded path a second time; S3 signs the wire path as it is and
/// carries the payload hash in `x-amz-content-sha256`.
public enum SigV4 {
    public static let algorithm = "AWS4-HMAC-SHA256"
    /// Hop-by-hop and proxy-rewritten headers that a signature must not cover (botocore's list).
    static let unsignableHeaders: Set<String> = [
        "authorization", "connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization",
        "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id",
    ]

    /// The parts of a request that a signature covers, already in canonical form.
    public struct CanonicalRequest: Sendable, Equatable {
        public var method: String
        public var canonicalURI: String
        public var canonicalQuery: String
        /// Lowercased names, sorted, values trimmed with inner whitespace runs collapsed.
        public var canonicalHeaders: [(name: String, value: String)]
        public var payloadHash: String

        public var signedHeaders: String { canonicalHeaders.map(\.name).joined(separator: ";") }

        public var text: String {
            var lines = [method, canonicalURI, canonicalQuery]
            lines.append(contentsOf: canonicalHeaders.map { "\($0.name):\($0.value)" })
            lines.append("")
            lines.append(signedHeaders)
            lines.append(payloadHash)
            return lines.joined(separator: "\n")
        }

        public static func == (lhs: CanonicalRequest, rhs: CanonicalRequest) -> Bool {
            lhs.text == rhs.text
        }
    }

    /// Builds the canonical request of `method url` with exactly the headers in `headers` that are
    /// not on the unsignable list, plus `host` derived from the URL when absent.
    /// - Parameters:
    ///   - url: the URL as sent on the wire (path and query already percent-encoded).
    ///   - normalizesPath: true for every service but S3 (removes dot segments and empty
    ///     segments, then percent-encodes the path a second time).
    public static func canonicalRequest(method: String, url: String, headers: [(name: String, value: String)],
                                        payloadHash: String, normalizesPath: Bool) throws(SigV4Error) -> CanonicalRequest {
        let parts = try URLParts(url)
        var merged: [String: [String]] = [:]
        var order: [String] = []
        for header in headers {
            let name = header.name.lowercased()
            guard !unsignableHeaders.contains(name) else { continue }
            if merged[name] == nil { order.append(name) }
            merged[name, default: []].append(collapseWhitespace(header.value))
        }
        if merged["host"] == nil {
            merged["host"] = [parts.hostHeader]
        }
        let canonicalHeaders = merged.keys.sorted().map { name in
            (name: name, value: merged[name]!.joined(separator: ","))
        }
        let path = parts.path.isEmpty ? "/" : parts.path
        let canonicalURI = normalizesPath ? uriEncode(removeDotSegments(path), keepingSlashes: true) : path
        return CanonicalRequest(method: method.uppercased(), canonicalURI: canonicalURI,
                                canonicalQuery: canonicalQuery(parts.query), canonicalHeaders: canonicalHeaders,
                                payloadHash: payloadHash)
    }

    /// `yyyyMMdd'T'HHmmss'Z'`, the form of `x-amz-date`.
    public static func amzDate(_ instant: Double) -> String {
        String(ISO8601.format(instant).filter { $0 != "-" && $0 != ":" })
    }

    public static func credentialScope(date: String, region: String, service: String) -> String {
        "\(date.prefix(8))/\(region)/\(service)/aws4_request"
    }

    public static func stringToSign(_ canonicalRequest: CanonicalRequest, amzDate: String, region: String, service: String) -> String {
        let hash = SHA256.hexDigest(of: Array(canonicalRequest.text.utf8))
        return "\(algorithm)\n\(amzDate)\n\(credentialScope(date: amzDate, region: region, service: service))\n\(hash)"
    }

    /// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request").
    public static func signingKey(secret: String, date: String, region: String, service: String) -> SymmetricKey {
        var key = SymmetricKey(data: Array("AWS4\(secret)".utf8))
        for part in [String(date.prefix(8)), region, service, "aws4_request"] {
            key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key).bytes)
        }
        return key
    }

    /// The lowercase hex signature of a canonical request: what a verifier compares (in constant
    /// time) with the `Signature=` of an incoming Authorization header.
    /// - Parameter amzDate: the request's `x-amz-date` (`20260101T000000Z`).
    public static func signature(for canonicalRequest: CanonicalRequest, secret: String, amzDate: String,
                                 region: String, service: String) -> String {
        let key = signingKey(secret: secret, date: amzDate, region: region, service: service)
        let text = stringToSign(canonicalRequest, amzDate: amzDate, region: region, service: service)
        return HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key).bytes.hexString
    }

    public static func payloadHash(_ body: [UInt8]) -> String {
        SHA256.hexDigest(of: body)
    }

    /// SigV4's UriEncode is RFC 3986 percent-encoding with uppercase hex: `PercentEncoding`'s.
    public static func uriEncode<Text: StringProtocol>(_ text: Text, keepingSlashes: Bool = false) -> String {
        PercentEncoding.encode(text, keepingSlashes: keepingSlashes)
    }

    /// Percent-decodes `%XX` sequences (`+` stays a plus, as AWS reads query strings); nil when a
    /// `%` is not followed by two hex digits.
    public static func percentDecode<Text: StringProtocol>(_ text: Text) -> String? {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else {
                    return nil
                }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// A query string (`a=1&b=&c`) from decoded pairs, encoded the way the signature expects.
    public static func encodeQuery(_ pairs: [(name: String, value: String)]) -> String {
        PercentEncoding.form(pairs)
    }

    /// Sorted by encoded name, then encoded value; every pair written `name=value`, even empty ones.
    static func canonicalQuery(_ query: String) -> String {
        guard !query.isEmpty else { return "" }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: true).map { pair -> (String, String) in
            let name = pair.prefix { $0 != "=" }
            let value = pair.dropFirst(name.count + (name.count < pair.count ? 1 : 0))
            // Decode then re-encode, so that a client's looser encoding (`!`, `*`) signs the same.
            return (uriEncode(percentDecode(name) ?? String(name)), uriEncode(percentDecode(value) ?? String(value)))
        }
        return pairs.sorted { $0.0 == $1.0 ? $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) : $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// RFC 3986 section 5.2.4, plus dropping empty segments (AWS collapses repeated slashes).
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) where segment != "." {
            if segment == ".." {
                if !output.isEmpty { output.removeLast() }
            } else {
                output.append(segment)
            }
        }
        let leading = path.hasPrefix("/") ? "/" : ""
        let trailing = path.hasSuffix("/") && !output.isEmpty ? "/" : ""
        return leading + output.joined(separator: "/") + trailing
    }

    /// Space, tab and line breaks trimmed at both ends and runs of them collapsed to one space.
    static func collapseWhitespace(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\u{0B}" || $0 == "\u{0C}" })
            .joined(separator: " ")
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }
}

extension SigV4 {
    /// The parts of an incoming `Authorization` header, for verifying a request: rebuild the
    /// canonical request from the `signedHeaders` only, then compare `signature`.
    public struct Authorization: Sendable, Equatable {
        public var accessKeyID: String
        public var date: String
        public var region: String
        public var service: String
        /// Lowercased header names, in the order given (SigV4 requires them sorted).
        public var signedHeaders: [String]
        public var signature: String

        /// nil for anything that is not exactly `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`.
        public init?(header: String) {
            guard header.hasPrefix(SigV4.algorithm + " ") else { return nil }
            var fields: [String: String] = [:]
            for part in header.dropFirst(SigV4.algorithm.count + 1).split(separator: ",") {
                let trimmed = part.drop { $0 == " " }
                guard let equals = trimmed.firstIndex(of: "=") else { return nil }
                let name = String(trimmed[..<equals])
                guard fields[name] == nil else { return nil }
                fields[name] = String(trimmed[trimmed.index(after: equals)...])
            }
            guard fields.count == 3, let credential = fields["Credential"], let headers = fields["SignedHeaders"],
                  let signature = fields["Signature"] else { return nil }
            let scope = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard scope.count == 5, scope[4] == "aws4_request", scope[1].count == 8, scope[1].allSatisfy(\.isASCIIDigit),
                  !scope[0].isEmpty, !scope[2].isEmpty, !scope[3].isEmpty,
                  signature.count == 64, signature.utf8.allSatisfy({ SigV4.hexValue($0) != nil && !($0 >= 0x41 && $0 <= 0x46) })
            else { return nil }
            let names = headers.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty && $0 == $0.lowercased() }), names == names.sorted() else { return nil }
            accessKeyID = scope[0]
            date = scope[1]
            region = scope[2]
            service = scope[3]
            signedHeaders = names
            self.signature = signature
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

public struct SigV4Error: Error, Sendable, CustomStringConvertible {
    public let reason: String
    public var description: String { "cannot sign request: \(reason)" }
}

/// `scheme://[userinfo@]host[:port]/path?query#fragment`, split without decoding anything.
struct URLParts {
    var scheme: String
    var host: String
    var port: Int?
    var path: String
    var query: String

    init(_ url: String) throws(SigV4Error) {
        guard let schemeEnd = url.firstRange(ofText: "://") else { throw SigV4Error(reason: "URL without a scheme") }
        scheme = url[..<schemeEnd.lowerBound].lowercased()
        var rest = url[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let remainder = rest[authorityEnd...]
        if let question = remainder.firstIndex(of: "?") {
            path = String(remainder[..<question])
            query = String(remainder[remainder.index(after: question)...])
        } else {
            path = String(remainder)
            query = ""
        }
        // An IPv6 literal keeps its brackets; its colons are not a port separator.
        let portSeparator = authority.hasPrefix("[") ? authority.firstRange(ofText: "]:").map { authority.index(before: $0.upperBound) }
                                                      : authority.lastIndex(of: ":")
        if let portSeparator {
            guard let number = Int(authority[authority.index(after: portSeparator)...]), (0...65_535).contains(number) else {
                throw SigV4Error(reason: "URL with an invalid port")
            }
            port = number
            host = authority[..<portSeparator].lowercased()
        } else {
            host = authority.lowercased()
        }
        guard !host.isEmpty else { throw SigV4Error(reason: "URL without a host") }
    }

    /// The Host header a client sends: the port only when it is not the scheme's default.
    var hostHeader: String {
        guard let port, port != (scheme == "https" ? 443 : scheme == "http" ? 80 : -1) else { return host }
        return "\(host):\(port)"
    }
}

/// Signs outgoing requests for one service in one region with one set of credentials.
public struct SigV4Signer: Sendable {
    public var credentials: AWSCredentials
    public var region: String
    public var service: String
    /// S3 differs: no path normalisation or second encoding, and the payload hash is sent (and
    /// signed) as `x-amz-content-sha256`.
    public var isS3: Bool

    public init(credentials: AWSCredentials, region: String, service: String) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.isS3 = service == "s3"
    }

    /// Adds `X-Amz-Date`, `X-Amz-Security-Token` (with a session token), `X-Amz-Content-SHA256`
    /// (S3) and `Authorization` to `request`; headers already in it are signed as given.
    /// - Parameter now: epoch seconds (injected clock).
    public func sign(_ request: HTTPRequest, now: Double) throws(SigV4Error) -> HTTPRequest {
        let replaced: Set<String> = ["authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"]
        var signed = request
        signed.headers.removeAll { replaced.contains($0.name.lowercased()) }
        let date = SigV4.amzDate(now)
        let payloadHash = SigV4.payloadHash(request.body)
        signed.headers.append((name: "X-Amz-Date", value: date))
        if let token = credentials.sessionToken {
            signed.headers.append((name: "X-Amz-Security-Token", value: token))
        }
        if isS3 {
            signed.headers.append((name: "X-Amz-Content-SHA256", value: payloadHash))
        }
        let canonical = try SigV4.canonicalRequest(method: request.method, url: request.url, headers: signed.headers,
                                                   payloadHash: payloadHash, normalizesPath: !isS3)
        let signature = SigV4.signature(for: canonical, secret: credentials.secretAccessKey, amzDate: date,
                                        region: region, service: service)
        let scope = SigV4.credentialScope(date: date, region: region, service: service)
        signed.headers.append((name: "Authorization",
                               value: "\(SigV4.algorithm) Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(canonical.signedHeaders), Signature=\(signature)"))
        return signed
    }
}
