/// Checks a request signed with AWS Signature Version 4 using credentials that
/// `LocalCredentialMinter` issued: the session token is authentic and unexpired, it belongs to the
/// signing access key, the signature covers the token and matches, and an S3 object key (or a
/// listing's `prefix`) stays inside the user's `users/<user id>/` prefix. No table look-up.
public struct LocalCredentialVerifier: Sendable {
    let minter: LocalCredentialMinter
    /// How far `x-amz-date` may be from now, as AWS allows.
    public static let maximumClockSkew: Int64 = 900

    public init(masterSecret: String) {
        minter = LocalCredentialMinter(masterSecret: masterSecret, lifetime: 0, random: SystemRandomSource())
    }

    public struct Request: Sendable {
        public var method: String
        /// As sent on the wire: scheme, host, percent-encoded path and query.
        public var url: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(method: String, url: String, headers: [(name: String, value: String)], body: [UInt8] = []) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
        }

        func header(_ name: String) -> String? {
            headers.last { $0.name.lowercased() == name }?.value
        }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformedAuthorization
        case unsignedHeader(String)
        case sessionToken(LocalCredentialMinter.VerificationFailure)
        case requestTimeSkewed
        case payloadHashMismatch
        case signatureMismatch
        case outsideUserPrefix(String)

        public var description: String {
            switch self {
            case .malformedAuthorization: return "the Authorization header is not a SigV4 signature"
            case .unsignedHeader(let name): return "the signature does not cover \(name)"
            case .sessionToken(let failure): return failure.description
            case .requestTimeSkewed: return "x-amz-date is more than 15 minutes from now"
            case .payloadHashMismatch: return "x-amz-content-sha256 does not match the body"
            case .signatureMismatch: return "the signature does not match the request"
            case .outsideUserPrefix(let key): return "\(key) is outside the credentials' prefix"
            }
        }
    }

    public func verify(_ request: Request, now: Int64) throws(Failure) -> LocalCredentialMinter.SessionTokenClaims {
        guard let header = request.header("authorization"), let authorization = SigV4.Authorization(header: header) else {
            throw .malformedAuthorization
        }
        for required in ["host", "x-amz-date", "x-amz-security-token"] where !authorization.signedHeaders.contains(required) {
            throw .unsignedHeader(required)
        }
        guard let token = request.header("x-amz-security-token"), let amzDate = request.header("x-amz-date") else {
            throw .unsignedHeader("x-amz-security-token")
        }
        let opened: (claims: LocalCredentialMinter.SessionTokenClaims, secretAccessKey: String)
        do {
            opened = try minter.open(sessionToken: token, accessKeyID: authorization.accessKeyID, now: now)
        } catch {
            throw .sessionToken(error)
        }
        guard amzDate.hasPrefix(authorization.date), let signedAt = SigV4.parseAmzDate(amzDate),
              abs(signedAt - now) <= LocalCredentialVerifier.maximumClockSkew else {
            throw .requestTimeSkewed
        }
        let bodyHash = SigV4.payloadHash(request.body)
        var payloadHash = bodyHash
        if let declared = request.header("x-amz-content-sha256") {
            if declared == "UNSIGNED-PAYLOAD" {
                payloadHash = declared
            } else if declared != bodyHash {
                throw .payloadHashMismatch
            }
        }
        let signedHeaders = request.headers.filter { authorization.signedHeaders.contains($0.name.lowercased()) }
        let isS3 = authorization.service == "s3"
        guard let canonical = try? SigV4.canonicalRequest(method: request.method, url: request.url, headers: signedHeaders,
                                                          payloadHash: payloadHash, normalizesPath: !isS3),
              canonical.signedHeaders == authorization.signedHeaders.joined(separator: ";") else {
            throw .malformedAuthorization
        }
        let expected = SigV4.signature(for: canonical, secret: opened.secretAccessKey, amzDate: amzDate,
                                       region: authorization.region, service: authorization.service)
        guard constantTimeEqual(expected.utf8, authorization.signature.utf8) else {
            throw .signatureMismatch
        }
        if isS3 { try checkPrefix(canonical: canonical, request: request, prefix: opened.claims.prefix) }
        return opened.claims
    }

    /// Object requests: the key (path-style `/bucket/key` or virtual-hosted `/key`) must start with
    /// the prefix; listings: their `prefix` parameter must.
    func checkPrefix(canonical: SigV4.CanonicalRequest, request: Request, prefix: String) throws(Failure) {
        let path = SigV4.percentDecode(canonical.canonicalURI) ?? canonical.canonicalURI
        let segments = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: true)
        let keyCandidates = [String(path.drop { $0 == "/" }), segments.count == 2 ? String(segments[1]) : ""]
        if keyCandidates.contains(where: { $0.hasPrefix(prefix) && !$0.contains(text: "/../") }) { return }
        let listingPrefix = canonical.canonicalQuery.split(separator: "&")
            .first { $0.hasPrefix("prefix=") }
            .flatMap { SigV4.percentDecode($0.dropFirst("prefix=".count)) }
        if let listingPrefix, listingPrefix.hasPrefix(prefix) { return }
        throw .outsideUserPrefix(listingPrefix ?? path)
    }
}

extension SigV4 {
    /// `20260101T000000Z` → epoch seconds.
    static func parseAmzDate(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 16, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "Z") else { return nil }
        let iso = "\(text.prefix(4))-\(text.dropFirst(4).prefix(2))-\(text.dropFirst(6).prefix(2))T"
            + "\(text.dropFirst(9).prefix(2)):\(text.dropFirst(11).prefix(2)):\(text.dropFirst(13).prefix(2))Z"
        return ISO8601.parse(iso).map { Int64($0) }
    }
}
