import LambdaAuth

/// The template's JWT authorizer, as API Gateway's HTTP API applies it: `GatewayJWTRules`, the
/// rules our `authorizer` also applies. Nothing else of ours is checked (`sid`, `jti`, the
/// session): that is the handler's caller check, as behind API Gateway.
public struct GatewayAuthorizer: Sendable {
    public let rules: GatewayJWTRules
    public var issuer: String { rules.issuer }
    public var audiences: [String] { rules.audiences }
    /// The issuer's published keys (`well-known`'s JWKS): read at each check, since the dev key is
    /// created by the first sign-in and a rotation may add keys while serve runs.
    let keys: @Sendable () -> [JSONWebKey]

    public init(issuer: String, audiences: [String], keys: @escaping @Sendable () -> [JSONWebKey]) {
        rules = GatewayJWTRules(issuer: issuer, audiences: audiences)
        self.keys = keys
    }

    /// The claims of an `Authorization` header that passes; nil for anything API Gateway refuses.
    public func claims(authorization: String?, now: Int64) -> [String: JSONValue]? {
        guard let token = GatewayJWTRules.token(authorization: authorization) else { return nil }
        return rules.claims(token: token, keys: keys(), now: now)
    }
}
