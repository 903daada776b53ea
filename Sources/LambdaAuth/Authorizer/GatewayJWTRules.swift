/// API Gateway's HTTP API JWT authorizer's rules (contract section 13), as AWS documents them: an
/// RSA algorithm, a `kid` present in the issuer's JWKS, the signature, `iss` equal to the issuer,
/// `aud` among the audiences (or `client_id` when there is no `aud`), `exp` after now, `nbf` and
/// `iat` not after now. No clock skew: API Gateway allows none. One implementation for serve's
/// stand-in of that authorizer and for our own `authorizer`, so the two can never disagree on a
/// token that is not revoked.
public struct GatewayJWTRules: Sendable {
    /// What API Gateway verifies: RSA signatures only.
    public static let algorithms: [JWSAlgorithm] = [.rs256, .rs384, .rs512]

    public let issuer: String
    public let audiences: [String]

    public init(issuer: String, audiences: [String]) {
        self.issuer = issuer
        self.audiences = audiences
    }

    /// The token of an `Authorization` value (`Bearer <token>`, or the token alone, as API
    /// Gateway takes either); nil when there is none.
    public static func token(authorization: String?) -> String? {
        guard var token = authorization.map(trimmed), !token.isEmpty else { return nil }
        if token.lowercased().hasPrefix("bearer ") { token = trimmed(String(token.dropFirst("bearer ".count))) }
        return token.isEmpty ? nil : token
    }

    private static func trimmed(_ text: String) -> String {
        var slice = Substring(text)
        while slice.first == " " || slice.first == "\t" { slice = slice.dropFirst() }
        while slice.last == " " || slice.last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }

    /// The claims of a token that passes; nil for anything API Gateway refuses.
    public func claims(token: String, keys: [JSONWebKey], now: Int64) -> [String: JSONValue]? {
        guard let parsed = try? JSONWebToken(parsing: token), (try? parsed.jws.checkAlgorithm(allowed: GatewayJWTRules.algorithms)) != nil,
              let keyID = parsed.jws.keyID, let key = keys.first(where: { $0.keyID == keyID }),
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
