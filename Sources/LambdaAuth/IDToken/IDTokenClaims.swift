import Crypto

/// The claim checks of an ID token, run only once its signature has verified (so that nothing a
/// forger writes into a payload ever decides which error a caller sees). Each check is its own
/// function so that lower-level callers (the RFC 7515 vectors, our access tokens) take only the
/// ones that apply to them.
public enum IDTokenClaims {
    /// INVALID_ISSUER unless `iss` is one of `issuers`, exactly.
    public static func checkIssuer(_ payload: [String: JSONValue], issuers: [String]) throws(AuthError) {
        guard let issuer = payload["iss"]?.stringValue, issuers.contains(issuer) else {
            throw AuthError(.invalidIssuer, "the token's issuer is not \(issuers.joined(separator: " or "))")
        }
    }

    /// INVALID_AUDIENCE unless `aud` (a string, or an array of strings) names an accepted audience
    /// and, when it names several, `azp` is an accepted one too.
    ///
    /// A token issued to several audiences was requested by one of them, its authorized party
    /// (OpenID Connect Core 3.1.3.7 items 4 and 5): `aud: [other, ours]` with `azp: other` is
    /// another client's token that merely lists us, and whoever holds it is not signing in to us.
    /// A single audience is judged by `aud` alone, whatever `azp` says: Google's token for an
    /// Android app names the server's client id in `aud` and the Android client's in `azp`.
    public static func checkAudience(_ payload: [String: JSONValue], audiences: [String]) throws(AuthError) {
        let accepted: Bool
        var several = false
        switch payload["aud"] {
        case .string(let audience)?: accepted = audiences.contains(audience)
        case .array(let list)?:
            accepted = list.contains { $0.stringValue.map(audiences.contains) ?? false }
            several = list.count > 1
        default: accepted = false
        }
        guard accepted else {
            throw AuthError(.invalidAudience, "the token's audience is not one of the accepted client IDs")
        }
        guard several else { return }
        guard let party = payload["azp"]?.stringValue, audiences.contains(party) else {
            throw AuthError(.invalidAudience, "the token names several audiences and its azp is not one of the accepted client IDs")
        }
    }

    /// `exp` must be present and after now − skew; `iat` and `nbf`, when present, not after now + skew.
    public static func checkTimes(_ payload: [String: JSONValue], now: Double, skew: Int64) throws(AuthError) {
        let tolerance = Double(skew)
        guard let expiry = payload["exp"]?.doubleValue else {
            throw AuthError(.tokenExpired, "the ID token has no numeric exp")
        }
        if expiry <= now - tolerance {
            throw AuthError(.tokenExpired, "the ID token expired at \(describeInstant(expiry))")
        }
        try checkNotBefore(payload["iat"], name: "iat", latest: now + tolerance)
        try checkNotBefore(payload["nbf"], name: "nbf", latest: now + tolerance)
    }

    static func checkNotBefore(_ value: JSONValue?, name: String, latest: Double) throws(AuthError) {
        guard let value else { return }
        guard let instant = value.doubleValue else {
            throw AuthError(.malformedToken, "the token's \(name) must be a number")
        }
        if instant > latest {
            throw AuthError(.tokenNotYetValid, "the ID token is not valid before \(describeInstant(instant)) (\(name))")
        }
    }

    /// The request's raw nonce must be the token's `nonce` or its lowercase hex SHA-256 (Apple
    /// recommends sending the hash to the provider). A token carrying a nonce needs one in the
    /// request: without it, a token captured from another sign-in could be replayed here.
    public static func checkNonce(_ payload: [String: JSONValue], requestNonce: String?, requireNonce: Bool) throws(AuthError) {
        let tokenNonce = payload["nonce"]
        guard let requestNonce else {
            if requireNonce {
                throw AuthError(.nonceRequired, "a nonce is required with the ID token")
            }
            if tokenNonce != nil {
                throw AuthError(.nonceRequired, "the ID token carries a nonce; the request must send it")
            }
            return
        }
        guard let tokenNonce = tokenNonce?.stringValue,
              tokenNonce == requestNonce || tokenNonce == SHA256.hexDigest(of: Array(requestNonce.utf8))
        else {
            throw AuthError(.nonceMismatch, "the request's nonce does not match the ID token's nonce")
        }
    }

    /// Apple sends `email_verified` and `is_private_email` as the strings "true"/"false", Google as
    /// booleans. Anything else counts as false: an unverifiable claim of verification is no claim.
    public static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let flag)?: return flag
        case .string("true")?: return true
        default: return false
        }
    }

    /// An instant for an error message; absurd values (which a signed token may still carry) are
    /// shown as epoch seconds rather than as a calendar date.
    static func describeInstant(_ instant: Double) -> String {
        guard instant > -62_135_596_800, instant < 253_402_300_800 else { return "epoch \(instant)" }
        return ISO8601.format(instant)
    }
}
