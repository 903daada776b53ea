#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A client's IP address as per-IP rate limits count it (contract section 13): an IPv4 address
/// by itself, an IPv6 address by its /64 prefix (one customer line or host gets a whole /64,
/// so counting single IPv6 addresses would give an attacker 2^64 budgets), each in one canonical
/// spelling, so that `::2` and `::02` are one key.
public struct SourceAddress: Sendable, Hashable, CustomStringConvertible {
    /// `203.0.113.7`, or `2001:db8:1:2::/64` (RFC 5952 text of the prefix).
    public let rateLimitKey: String

    /// nil unless `text` is exactly an IPv4 dotted quad or an IPv6 address. Parsed by the C
    /// library's `inet_pton`, which takes only those forms (no shorthand like `127.1`, no
    /// octal or hex, no zone); the characters are checked first because a C string would end at
    /// an embedded NUL and let trailing bytes through.
    public init?(_ text: String) {
        let allowed = Array("0123456789abcdefABCDEF.:".utf8)
        guard !text.isEmpty, text.utf8.count <= 45, text.utf8.allSatisfy(allowed.contains) else { return nil }
        var v4 = in_addr()
        if text.withCString({ inet_pton(AF_INET, $0, &v4) }) == 1 {
            rateLimitKey = SourceAddress.format(AF_INET, &v4)
            return
        }
        var v6 = in6_addr()
        guard text.withCString({ inet_pton(AF_INET6, $0, &v6) }) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        // An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 client: keyed as such, not as
        // the one /64 every mapped address would share.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            v4 = in_addr()
            withUnsafeMutableBytes(of: &v4) { $0.copyBytes(from: bytes[12..<16]) }
            rateLimitKey = SourceAddress.format(AF_INET, &v4)
            return
        }
        withUnsafeMutableBytes(of: &v6) { raw in
            for index in 8..<16 { raw[index] = 0 }
        }
        rateLimitKey = SourceAddress.format(AF_INET6, &v6) + "/64"
    }

    private static func format<Address>(_ family: Int32, _ address: inout Address) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let length = buffer.count
        _ = withUnsafePointer(to: &address) { inet_ntop(family, $0, &buffer, socklen_t(length)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { rateLimitKey }
}

/// Where a request came from, as far as per-IP limits care: a direct invocation (another AWS
/// service or an operator, not limited) or a client over HTTP, whose source IP API Gateway or the
/// function URL reported.
public enum RequestOrigin: Sendable {
    case direct
    case http(sourceIP: String?)

    /// The key per-IP limits count; nil for a direct invocation. Over HTTP a missing, empty,
    /// non-string or unparsable source IP is INVALID_REQUEST: a limited request that cannot be
    /// counted is refused rather than let through uncounted.
    func rateLimitKey() throws(AuthError) -> String? {
        guard case .http(let sourceIP) = self else { return nil }
        guard let sourceIP, let address = SourceAddress(sourceIP) else {
            throw AuthError(.invalidRequest, "the request has no usable source IP (requestContext sourceIp), which rate limits need")
        }
        return address.rateLimitKey
    }
}

extension InvocationRequest {
    public var origin: RequestOrigin { kind.isHTTP ? .http(sourceIP: sourceIP) : .direct }
}
