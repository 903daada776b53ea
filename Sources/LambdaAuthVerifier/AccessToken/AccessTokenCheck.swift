/// The one check of our access tokens, wherever they are verified: the handlers (keys from their
/// own key set) and other services through `AccessTokenVerifier` (keys from the published JWKS)
/// differ only in where the key for a `kid` comes from.
///
/// Order: size, structure, header (no `crit`, `alg` RS256 or ES256, a `kid`), the key (whose own
/// algorithm must be the header's), the signature; only then the claims `iss`, `aud`, `exp`, `nbf`
/// and the required `sub`, `sid`, `iat` (not in the future: API Gateway's authorizer refuses such a
/// token, so we do too), `jti`. Every
/// failure about the token is ACCESS_TOKEN_INVALID; the message says which check failed, never
/// the token. Errors of the key lookup itself (JWKS_UNAVAILABLE) pass through.
package struct AccessTokenCheck: Sendable {
    /// What our access tokens may be signed with: RS256 (RSA keys, the only kind API Gateway's JWT
    /// authorizer verifies) and ES256 (P-256 keys).
    package static let algorithms: [JWSAlgorithm] = [.rs256, .es256]

    /// Ours are well under 1 KiB; anything near this is not one of them.
    package static let maximumBytes = 8192

    package let issuer: String
    /// Accepted when the token's `aud` names any of them.
    package let audiences: [String]
    /// Seconds an expired token is still accepted for (zero where the clock is the issuer's own).
    package let clockSkew: Int64

    package init(issuer: String, audiences: [String], clockSkew: Int64) {
        self.issuer = issuer
        self.audiences = audiences
        self.clockSkew = clockSkew
    }

    /// `key`: the verification key named by the token's `kid`, or nil when there is none.
    package func verify(_ token: String, now: Int64,
                        key: (String) throws(AuthError) -> JSONWebKey?) throws(AuthError) -> AccessTokenClaims {
        func invalid(_ reason: String) -> AuthError { AuthError(.accessTokenInvalid, "the access token \(reason)") }
        guard token.utf8.count <= AccessTokenCheck.maximumBytes else { throw invalid("is too long") }
        // The ID tokens' strict parser and algorithm checks, with their codes folded into ours.
        let parsed: JSONWebToken
        do {
            parsed = try JSONWebToken(parsing: token)
            _ = try parsed.jws.checkAlgorithm(allowed: AccessTokenCheck.algorithms)
        } catch {
            throw error.code == .unsupportedAlgorithm ? invalid("has the wrong algorithm") : invalid("is malformed")
        }
        // A key that left the set (retired after a rotation) no longer vouches for anything.
        guard let keyID = parsed.jws.keyID, !keyID.isEmpty, let verificationKey = try key(keyID) else {
            throw invalid("was not signed by one of the issuer's keys")
        }
        do {
            try parsed.jws.verifySignature(with: verificationKey)
        } catch {
            throw invalid("signature does not verify")
        }
        let claims = parsed.claims
        guard let tokenIssuer = claims["iss"]?.stringValue, tokenIssuer == issuer else { throw invalid("has the wrong issuer") }
        // RFC 7519 §4.1.3: a string or an array of strings; ours is a string, others may list several.
        let tokenAudiences = claims["aud"]?.stringValue.map { [$0] } ?? claims["aud"]?.arrayValue?.compactMap(\.stringValue) ?? []
        guard tokenAudiences.contains(where: audiences.contains) else { throw invalid("is not meant for this audience") }
        guard let expiresAt = claims["exp"]?.int64Value else { throw invalid("has no expiry") }
        guard expiresAt > now - clockSkew else { throw invalid("expired at \(ISO8601.format(epochSeconds: expiresAt))") }
        guard let userID = claims["sub"]?.stringValue, let sessionID = claims["sid"]?.stringValue,
              let issuedAt = claims["iat"]?.int64Value, let tokenID = claims["jti"]?.stringValue else {
            throw invalid("lacks required claims")
        }
        guard issuedAt <= now + clockSkew else { throw invalid("was issued in the future") }
        if let notBefore = claims["nbf"] {
            guard let notBefore = notBefore.int64Value, notBefore <= now + clockSkew else { throw invalid("is not valid yet") }
        }
        return AccessTokenClaims(userID: userID, sessionID: sessionID, issuedAt: issuedAt, expiresAt: expiresAt, tokenID: tokenID,
                                 issuer: tokenIssuer, audiences: tokenAudiences,
                                 isAnonymous: claims["is_anonymous"]?.boolValue == true, claims: claims)
    }
}
