/// The sessions and users whose access tokens may still be valid by their signature and `exp`
/// but must be refused (contract section 20): every revocation of the last access-token lifetime
/// plus clock skew. Nothing older is listed, since no token it could concern is still valid.
public struct RevocationList: Sendable, Equatable {
    /// `sids`: sessions signed out, revoked, evicted, or refused for reuse of a refresh token.
    public var sessionIDs: Set<String>
    /// `subs`: users deleted (their account, or by Apple's notification).
    public var userIDs: Set<String>
    /// When the issuer read the list (epoch seconds): the list says nothing of later revocations.
    public var issuedAt: Int64

    public init(sessionIDs: Set<String> = [], userIDs: Set<String> = [], issuedAt: Int64) {
        self.sessionIDs = sessionIDs
        self.userIDs = userIDs
        self.issuedAt = issuedAt
    }

    public func revokes(userID: String, sessionID: String) -> Bool {
        sessionIDs.contains(sessionID) || userIDs.contains(userID)
    }

    public func revokes(_ claims: AccessTokenClaims) -> Bool {
        revokes(userID: claims.userID, sessionID: claims.sessionID)
    }

    /// The refusal every checker answers for a listed token.
    package static func revoked(_ claims: AccessTokenClaims) -> AuthError {
        AuthError(.accessTokenRevoked, "the access token's session was ended", detail: nil)
            .about(userID: claims.userID, sessionID: claims.sessionID)
    }
}

/// `GET /.well-known/revocations`: the list as a compact JWS signed with the access-token key,
/// so a resource server trusts it exactly as far as it trusts our tokens (same JWKS, same `kid`s),
/// and a copy served by anyone in between cannot add or drop a session.
public enum RevocationDocument {
    /// The JWS header's `typ`: an access token (`typ: JWT`) can never pass as a list, nor the reverse.
    public static let type = "revocations+jwt"
    /// `exp` = `iat` + this: a list older than a minute proves nothing about the last minute.
    public static let lifetime: Int64 = 60
    /// The `cache-control: max-age` it is served with, and the verifier's default maximum age.
    public static let maximumAge: Int64 = 5
    /// Each listed id is ~30 bytes; 4 MiB holds over 100,000 revocations within one access-token
    /// lifetime (the Lambda response limit is 6 MB).
    public static let maximumBytes = 4 << 20

    /// The payload `{"iss", "iat", "exp", "sids", "subs"}`; ids sorted, so one list has one spelling.
    public static func payload(_ list: RevocationList, issuer: String) -> [String: JSONValue] {
        ["iss": .string(issuer), "iat": .number(list.issuedAt), "exp": .number(list.issuedAt + lifetime),
         "sids": .array(list.sessionIDs.sorted().map(JSONValue.string)), "subs": .array(list.userIDs.sorted().map(JSONValue.string))]
    }

    /// Parses and verifies a published list: `typ`, an algorithm of our access tokens with the key
    /// its `kid` names (`key` returns nil for an unknown one), the signature, `iss`, and `exp` after
    /// `now`. Any failure is thrown as a description for the log: a list that does not verify is
    /// a failed fetch, never a refusal of tokens by itself.
    public static func parse(_ document: String, issuer: String, now: Int64,
                             key: (String) throws(AuthError) -> JSONWebKey?) throws(AuthError) -> RevocationList {
        func unusable(_ reason: String) -> AuthError { AuthError(.jwksUnavailable, "the revocation list \(reason)") }
        let jws = try CompactJWS(parsing: document, maximumBytes: maximumBytes)
        guard jws.header["typ"]?.stringValue == type else { throw unusable("is not of type \(type)") }
        do {
            _ = try jws.checkAlgorithm(allowed: AccessTokenCheck.algorithms)
        } catch {
            throw unusable("has the wrong algorithm")
        }
        guard let keyID = jws.keyID, let verificationKey = try key(keyID) else { throw unusable("was not signed by one of the issuer's keys") }
        do {
            try jws.verifySignature(with: verificationKey)
        } catch {
            throw unusable("signature does not verify")
        }
        let claims = try CompactJWS.parseObject(jws.payload, what: "payload")
        guard claims["iss"]?.stringValue == issuer else { throw unusable("has the wrong issuer") }
        guard let issuedAt = claims["iat"]?.int64Value, let expiresAt = claims["exp"]?.int64Value else { throw unusable("lacks iat or exp") }
        guard expiresAt > now else { throw unusable("expired at \(ISO8601.format(epochSeconds: expiresAt))") }
        guard let sids = claims["sids"]?.arrayValue, let subs = claims["subs"]?.arrayValue else { throw unusable("lacks sids or subs") }
        let sessionIDs = sids.compactMap(\.stringValue), userIDs = subs.compactMap(\.stringValue)
        guard sessionIDs.count == sids.count, userIDs.count == subs.count else { throw unusable("lists an id that is not a string") }
        return RevocationList(sessionIDs: Set(sessionIDs), userIDs: Set(userIDs), issuedAt: issuedAt)
    }
}
