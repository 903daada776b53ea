import LambdaAuth

/// The template's JWT authorizer, as API Gateway's HTTP API applies it (contract section 13): an
/// RSA algorithm, a `kid` present in the issuer's JWKS, the signature, `iss` equal to the issuer,
/// `aud` among the audiences (or `client_id` when there is no `aud`), `exp` after now, `nbf` and
/// `iat` not after now. No clock skew: API Gateway allows none. Nothing else of ours is checked
/// (`sid`, `jti`, the session): that is the handler's caller check, as behind API Gateway.
public struct GatewayAuthorizer: Sendable {
    /// What API Gateway verifies: RSA signatures only.
    static let algorithms: [JWSAlgorithm] = [.rs256, .rs384, .rs512]

    public let issuer: String
    public let audiences: [String]
    /// The issuer's published keys (`well-known`'s JWKS): read at each check, since the dev key is
    /// created by the first sign-in and a rotation may add keys while serve runs.
    let keys: @Sendable () -> [JSONWebKey]

    public init(issuer: String, audiences: [String], keys: @escaping @Sendable () -> [JSONWebKey]) {
        self.issuer = issuer
        self.audiences = audiences
        self.keys = keys
    }

    /// The claims of an `Authorization` header that passes; nil for anything API Gateway refuses.
    public func claims(authorization: String?, now: Int64) -> [String: JSONValue]? {
        guard var token = authorization?.trimmingSpaces(), !token.isEmpty else { return nil }
        if token.lowercased().hasPrefix("bearer ") { token = String(token.dropFirst("bearer ".count)).trimmingSpaces() }
        guard let parsed = try? JSONWebToken(parsing: token), (try? parsed.jws.checkAlgorithm(allowed: GatewayAuthorizer.algorithms)) != nil,
              let keyID = parsed.jws.keyID, let key = keys().first(where: { $0.keyID == keyID }),
              (try? parsed.jws.verifySignature(with: key)) != nil else { return nil }
        let claims = parsed.claims
        guard claims["iss"]?.stringValue == issuer else { return nil }
        let tokenAudiences: [String]
        if let audience = claims["aud"] {
            tokenAudiences = audience.stringValue.map { [$0] } ?? audience.arrayValue?.compactMap(\.stringValue) ?? []
        } else {
            tokenAudiences = claims["client_id"]?.stringValue.map { [$0] } ?? []
        }
        guard tokenAudiences.contains(where: audiences.contains) else { return nil }
        guard let expiresAt = claims["exp"]?.int64Value, expiresAt > now else { return nil }
        for name in ["nbf", "iat"] {
            if let value = claims[name] {
                guard let seconds = value.int64Value, seconds <= now else { return nil }
            }
        }
        return claims
    }
}
