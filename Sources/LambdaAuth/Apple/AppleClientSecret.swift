import Synchronization

/// The `client_secret` Apple's token and revocation endpoints take: a JWT signed with the team's
/// `.p8` key through the one JWS path that signs our access tokens (ES256, header `kid` = key id;
/// `iss` = team id, `iat`, `exp`, `aud` = Apple, `sub` = the client id the ID token was issued
/// to). One per client id is kept for the process and re-signed shortly before it expires, so a
/// warm handler signs about once an hour, not once a request.
final class AppleClientSecrets: Sendable {
    static let audience = "https://appleid.apple.com"
    /// Apple accepts up to six months; an hour limits what a leaked secret is worth.
    static let lifetime: Int64 = 3600
    /// Re-signed this long before `exp`, so no request carries a secret about to expire in flight.
    static let renewalMargin: Int64 = 300

    private struct Cached {
        var secret: String
        var expiresAt: Int64
    }

    let settings: AppleServerSettings
    let clock: any WallClock
    private let cache = Mutex<[String: Cached]>([:])

    init(settings: AppleServerSettings, clock: any WallClock) {
        self.settings = settings
        self.clock = clock
    }

    func secret(clientID: String) throws(AuthError) -> String {
        let now = clock.nowSeconds
        if let cached = cache.withLock({ $0[clientID] }), now < cached.expiresAt - AppleClientSecrets.renewalMargin {
            return cached.secret
        }
        let claims: [String: JSONValue] = [
            "iss": .string(settings.teamID), "iat": .number(now), "exp": .number(now + AppleClientSecrets.lifetime),
            "aud": .string(AppleClientSecrets.audience), "sub": .string(clientID),
        ]
        let secret: String
        do {
            secret = try JWSSigner.signES256(payload: claims, keyID: settings.keyID, key: settings.privateKey)
        } catch {
            throw .internalError("signing Apple's client secret failed")
        }
        cache.withLock { $0[clientID] = Cached(secret: secret, expiresAt: now + AppleClientSecrets.lifetime) }
        return secret
    }
}
