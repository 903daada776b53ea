import Crypto

/// A key that signs our access tokens, with its `kid` (the RFC 7638 JWK thumbprint, so the same
/// key always has the same id wherever it is loaded). Its type decides the algorithm: an RSA key
/// signs RS256, which API Gateway's JWT authorizer requires; a P-256 key ES256 (contract section 13).
public struct AccessTokenKey: Sendable {
    public let signingKey: JWSSigningKey
    public let keyID: String
    /// Derived once: every caller check verifies against it.
    let verificationKey: JSONWebKey

    public init(_ signingKey: JWSSigningKey) {
        self.signingKey = signingKey
        let material = signingKey.publicMaterial
        self.keyID = material.thumbprint
        self.verificationKey = JSONWebKey(keyID: keyID, material: material)
    }

    public init(privateKey: P256.Signing.PrivateKey) {
        self.init(.p256(privateKey))
    }

    public var algorithm: JWSAlgorithm { signingKey.algorithm }

    /// A new random key (RSA: 2048 bits), for `authctl keys generate` and for test and replay
    /// environments that must configure one.
    public static func generate(_ algorithm: JWSAlgorithm = .rs256) -> AccessTokenKey {
        do {
            return AccessTokenKey(try JWSSigningKey.generate(algorithm))
        } catch {
            // BoringSSL's RSA key generation fails only when the system has no entropy to give.
            fatalError("could not generate an \(algorithm.rawValue) key: \(error)")
        }
    }

    /// The PEM text `AUTH_SIGNING_KEYS` takes.
    public var pemRepresentation: String { signingKey.pemRepresentation }

    /// The public JWK a resource server verifies our access tokens with (`kid`, `alg`, `use`).
    public var publicJWK: JSONValue { verificationKey.publicJWK }

    public var jwks: JSONValue { ["keys": [publicJWK]] }
}

/// Issues and verifies our access tokens: JWT, RS256 or ES256 by the signing key, claims iss, aud,
/// sub, sid, iat, exp, jti.
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
    /// `appMetadata`: the user's (contract section 17), as the claim `app_metadata` when not empty.
    /// `assurance`: the session's `aal` and `amr` claims (contract section 21).
    /// `hookClaims`: what the app's `accessTokenClaims` hook added (contract section 19), checked
    /// to name no reserved claim; ours are set after them, so they could not replace one anyway.
    public func issue(userID: String, sessionID: String, now: Int64, random: any RandomSource,
                      anonymous: Bool = false, appMetadata: [String: JSONValue] = [:],
                      assurance: [String: JSONValue] = [:], hookClaims: [String: JSONValue] = [:]) throws(AuthError) -> String {
        var claims = hookClaims
        let ours: [String: JSONValue] = [
            "iss": .string(issuer), "aud": .string(audience), "sub": .string(userID), "sid": .string(sessionID),
            "iat": .number(now), "exp": .number(now + lifetime), "jti": .string(random.identifier()),
        ]
        claims.merge(ours) { $1 }
        if anonymous { claims["is_anonymous"] = true }
        if !appMetadata.isEmpty { claims["app_metadata"] = .object(appMetadata) }
        claims.merge(assurance) { $1 }
        do {
            return try JWSSigner.sign(header: ["typ": "JWT"], payload: claims, keyID: key.keyID, key: key.signingKey)
        } catch {
            throw .internalError("\(key.algorithm.rawValue) signing failed: \(error)")
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
