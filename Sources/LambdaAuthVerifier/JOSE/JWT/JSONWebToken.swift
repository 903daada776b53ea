/// A JWT (RFC 7519): a compact JWS whose payload is a JSON object of claims, parsed strictly and
/// not yet verified. The claims are read at parse time, so a token whose payload is not such an
/// object is MALFORMED_TOKEN before any key is looked at; none of them may be trusted before
/// `jws.verifySignature(with:)` has passed.
public struct JSONWebToken: Sendable {
    public let jws: CompactJWS
    public let claims: [String: JSONValue]

    public init(parsing token: String) throws(AuthError) {
        jws = try CompactJWS(parsing: token)
        claims = try CompactJWS.parseObject(jws.payload, what: "payload")
    }
}
