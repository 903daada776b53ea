import Crypto

/// The ES256 key that signs our access tokens, with its `kid` (the RFC 7638 JWK thumbprint, so
/// the same key always has the same id wherever it is loaded).
public struct AccessTokenKey: Sendable {
    public let privateKey: P256.Signing.PrivateKey
    public let keyID: String
    /// Derived once: every caller check verifies against it.
    let verificationKey: JSONWebKey

    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
        self.keyID = JSONWebKey.Material.p256(privateKey.publicKey).thumbprint
        self.verificationKey = JSONWebKey(keyID: keyID, material: .p256(privateKey.publicKey))
    }

    /// A new random key, for test and replay environments that must configure one.
    public static func generate() -> AccessTokenKey {
        AccessTokenKey(privateKey: P256.Signing.PrivateKey())
    }

    /// The PEM text `AUTH_SIGNING_KEY` takes.
    public var pemRepresentation: String { privateKey.pemRepresentation }

    /// The public JWK a resource server verifies our access tokens with.
    public var publicJWK: JSONValue { verificationKey.publicJWK }

    public var jwks: JSONValue { ["keys": [publicJWK]] }
}

/// Issues and verifies our access tokens: JWT, ES256, claims iss, aud, sub, sid, iat, exp, jti.
/// The first key of the set signs; a token verifies under whichever key its `kid` names, as long
/// as that key is still in the set.
public struct AccessTokenIssuer: Sendable {
    public let keys: AccessTokenKeySet
    public let issuer: String
    public let audience: String
    public let lifetime: Int64

    public init(keys: AccessTokenKeySet, issuer: String, audience: String, lifetime: Int64) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.lifetime = lifetime
    }

    /// One key, audience = issuer (the default of `AUTH_ACCESS_TOKEN_AUDIENCE`).
    public init(key: AccessTokenKey, issuer: String, lifetime: Int64) {
        self.init(keys: AccessTokenKeySet([key]), issuer: issuer, audience: issuer, lifetime: lifetime)
    }

    /// The signing key.
    public var key: AccessTokenKey { keys.signing }

    /// `anonymous`: a guest's token also carries `"is_anonymous": true` (contract section 9).
    public func issue(userID: String, sessionID: String, now: Int64, random: any RandomSource,
                      anonymous: Bool = false) throws(AuthError) -> String {
        var claims: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(userID), "sid": .string(sessionID),
            "iat": .number(now), "exp": .number(now + lifetime), "jti": .string(random.identifier()),
        ]
        if anonymous { claims["is_anonymous"] = true }
        do {
            return try JWSSigner.signES256(header: ["typ": "JWT"], payload: claims, keyID: key.keyID, key: key.privateKey)
        } catch {
            throw AuthError(.internal, "internal error", detail: "ES256 signing failed: \(error)")
        }
    }

    /// Checks signature, `kid`, `iss`, `aud` and `exp` (no clock skew: we issued it on our own clock),
    /// with the checks other services make through `AccessTokenVerifier`. Every failure is
    /// ACCESS_TOKEN_INVALID; the message says which check failed, never the token.
    public func verify(_ token: String, now: Int64) throws(AuthError) -> AccessTokenClaims {
        try AccessTokenCheck(issuer: issuer, audiences: [audience], clockSkew: 0).verify(token, now: now) { keyID in
            keys.key(id: keyID)?.verificationKey
        }
    }
}
