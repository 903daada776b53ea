import CryptoExtras
import LambdaAuth

/// A local stand-in for Google and Apple so that everything runs offline: one RSA-2048 key kept
/// in a directory (default `.auth-dev/`), its JWKS written next to it for `file://` JWKS URLs,
/// and ID tokens shaped as each provider shapes them, signed with that key.
public struct DevIdentityProvider: Sendable {
    public static let defaultDirectory = ".auth-dev"
    public static let keyFileName = "idp-key.pem"
    public static let jwksFileName = "jwks.json"

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let privateKey: _RSA.Signing.PrivateKey
    /// The key's RFC 7638 thumbprint: stable for a key, different for the next one.
    public let keyID: String

    /// Keys for the tokens of configured OpenID Connect providers that the RSA key cannot sign
    /// (ES256, ES384, EdDSA). Made for each instance and never stored: tests publish them through
    /// `jwks(for:declaringAlgorithm:)` from the same instance that signs.
    public let curveKeys: [JWSSigningKey]

    public init(privateKey: _RSA.Signing.PrivateKey) {
        self.privateKey = privateKey
        keyID = JSONWebKey.Material.rsa(privateKey.publicKey).thumbprint
        // Generating a curve key cannot fail (only RSA generation can, for want of entropy).
        curveKeys = [JWSAlgorithm.es256, .es384, .edDSA].compactMap { try? JWSSigningKey.generate($0) }
    }

    /// The key that signs `algorithm`: the RSA key for RS* and PS*, a curve key otherwise.
    public func signingKey(for algorithm: JWSAlgorithm) -> JWSSigningKey {
        let rsa = JWSSigningKey.rsa(privateKey)
        return rsa.canSign(algorithm) ? rsa : curveKeys.first { $0.canSign(algorithm) } ?? rsa
    }

    /// The `kid` of `algorithm`'s key. When JWKs declare their `alg`, the RSA key is published once
    /// per RSA algorithm, so each algorithm but RS256 gets its own `kid`; undeclared, one JWK
    /// (one `kid`) serves them all, as Microsoft publishes its keys.
    public func keyID(for algorithm: JWSAlgorithm, declaringAlgorithm: Bool = true) -> String {
        let key = signingKey(for: algorithm)
        let base = key.publicMaterial.thumbprint
        return declaringAlgorithm && key.algorithm != algorithm ? base + "-" + algorithm.rawValue : base
    }

    /// A JWKS with a key for each of `algorithms`, declaring its `alg` or not.
    public func jwks(for algorithms: [JWSAlgorithm], declaringAlgorithm: Bool = true) -> JSONValue {
        var keys: [JSONValue] = [], published: Set<String> = []
        for algorithm in algorithms {
            let keyID = keyID(for: algorithm, declaringAlgorithm: declaringAlgorithm)
            guard published.insert(keyID).inserted,
                  case .object(var members) = JSONWebKey(keyID: keyID, material: signingKey(for: algorithm).publicMaterial).publicJWK
            else { continue }
            members["alg"] = declaringAlgorithm ? .string(algorithm.rawValue) : nil
            keys.append(.object(members))
        }
        return ["keys": .array(keys)]
    }

    /// A configured provider's ID token for `claims`, signed in `algorithm` with the `kid` that
    /// `jwks(for:declaringAlgorithm:)` publishes.
    public func token(claims: [String: JSONValue], algorithm: JWSAlgorithm, declaringAlgorithm: Bool = true) throws(Failure) -> String {
        do {
            return try JWSSigner.sign(header: ["typ": "JWT"], payload: claims,
                                      keyID: keyID(for: algorithm, declaringAlgorithm: declaringAlgorithm),
                                      key: signingKey(for: algorithm), algorithm: algorithm)
        } catch {
            throw Failure(description: "cannot sign \(algorithm.rawValue): \(error)")
        }
    }

    /// `{"keys": [the public key]}`, as the providers publish theirs.
    public var jwks: JSONValue {
        ["keys": [JSONWebKey(keyID: keyID, material: .rsa(privateKey.publicKey)).publicJWK]]
    }

    public static func keyPath(in directory: String) -> String { directory + "/" + keyFileName }
    public static func jwksPath(in directory: String) -> String { directory + "/" + jwksFileName }

    /// Loads the key kept in `directory`, creating one when there is none (an existing key is
    /// never replaced: tokens minted before keep verifying). Writes the JWKS file either way.
    public static func initialize(directory: String) throws(Failure) -> (provider: DevIdentityProvider, created: Bool) {
        let created: Bool
        let provider: DevIdentityProvider
        if FileSystem.exists(keyPath(in: directory)) {
            provider = try load(directory: directory)
            created = false
        } else {
            do {
                provider = DevIdentityProvider(privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
            } catch {
                throw Failure(description: "cannot generate an RSA key: \(error)")
            }
            try write(Array(provider.privateKey.pemRepresentation.utf8), to: keyPath(in: directory), mode: 0o600)
            created = true
        }
        try write(provider.jwks.serializedBytes() + [0x0A], to: jwksPath(in: directory), mode: 0o644)
        return (provider, created)
    }

    public static func load(directory: String) throws(Failure) -> DevIdentityProvider {
        let path = keyPath(in: directory)
        let pem: [UInt8]
        do {
            pem = try FileSystem.readFile(path, limit: 64 << 10)
        } catch {
            throw Failure(description: "no dev identity provider key at \(path) (run `authctl dev-idp init`): \(error)")
        }
        do {
            return DevIdentityProvider(privateKey: try _RSA.Signing.PrivateKey(pemRepresentation: String(decoding: pem, as: UTF8.self)))
        } catch {
            throw Failure(description: "\(path) does not hold an RSA private key of at least 2048 bits")
        }
    }

    static func write(_ bytes: [UInt8], to path: String, mode: UInt32) throws(Failure) {
        do {
            try FileSystem.createDirectory(FileSystem.parentDirectory(of: path))
            try FileSystem.writeAtomically(path, bytes, mode: mode)
        } catch {
            throw Failure(description: "cannot write \(path): \(error)")
        }
    }

    /// A signed ID token for `claims`, with the provider's usual header.
    public func token(claims: [String: JSONValue], provider: ProviderName) throws(Failure) -> String {
        let header: [String: JSONValue] = provider == .google ? ["typ": "JWT"] : [:]
        do {
            return try JWSSigner.signRS256(header: header, payload: claims, keyID: keyID, key: privateKey)
        } catch {
            throw Failure(description: "cannot sign: \(error)")
        }
    }

    /// A server-to-server notification's payload as Apple signs it (here with the dev key, whose
    /// JWKS stands in for Apple's): `events` a JSON string; email events carry a relay address.
    public func appleNotification(type: String, subject: String, audience: String, id: String, email: String? = nil,
                                  now: Int64) throws(Failure) -> String {
        var event: [String: JSONValue] = ["type": .string(type), "sub": .string(subject), "event_time": .number(now * 1000)]
        if type.hasPrefix("email-") {
            event["email"] = .string(email ?? "relay@privaterelay.appleid.com")
            event["is_private_email"] = "true"
        }
        let claims: [String: JSONValue] = [
            "iss": .string(OIDCProviderSettings.apple.issuer), "aud": .string(audience), "iat": .number(now), "exp": .number(now + 3600),
            "jti": .string(id), "events": .string(JSONValue.object(event).serialized()),
        ]
        return try token(claims: claims, provider: .apple)
    }
}

/// What a dev token says; each provider's shape is applied by `claims(for:now:)`.
public struct DevTokenOptions: Sendable {
    public var subject: String
    public var audience: String
    public var email: String?
    public var emailVerified = true
    public var nonce: String?
    public var name: String?
    public var picture: String?
    public var privateEmail = false
    public var expiresIn: Int64 = 3600
    /// Epoch seconds; nil: now.
    public var issuedAt: Int64?
    /// `iss` of a configured provider's token (the built-ins have their own); with a `{tenantid}`
    /// issuer, `tenantID` replaces the placeholder and becomes `tid`.
    public var issuer: String?
    public var tenantID: String?

    public init(subject: String, audience: String) {
        self.subject = subject
        self.audience = audience
    }

    /// Google sends booleans and `name`/`picture`; Apple sends "true"/"false" strings, never a
    /// name, and `is_private_email` for relay addresses.
    public func claims(for provider: ProviderName, now: Int64) -> [String: JSONValue] {
        let issued = issuedAt ?? now
        var configuredIssuer = issuer
        if let tenantID { configuredIssuer = configuredIssuer?.replacing("{tenantid}", with: tenantID) }
        var claims: [String: JSONValue] = [
            "iss": .string(configuredIssuer ?? [OIDCProviderSettings.google, .apple].first { $0.name == provider }?.issuer ?? ""),
            "aud": .string(audience),
            "sub": .string(subject),
            "iat": .number(issued),
            "exp": .number(issued + expiresIn),
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        if let tenantID { claims["tid"] = .string(tenantID) }
        switch provider {
        case .google:
            claims["azp"] = .string(audience)
            if let email {
                claims["email"] = .string(email)
                claims["email_verified"] = .bool(emailVerified)
            }
            if let name { claims["name"] = .string(name) }
            if let picture { claims["picture"] = .string(picture) }
        case .apple:
            claims["auth_time"] = .number(issued)
            claims["nonce_supported"] = true
            if let email {
                claims["email"] = .string(email)
                claims["email_verified"] = .string(emailVerified ? "true" : "false")
                claims["is_private_email"] = .string(privateEmail ? "true" : "false")
            }
        case .email:
            break  // no ID tokens: an email identity is proven by a one-time code
        default:
            // A configured OpenID Connect provider: the standard claims, email_verified a boolean.
            if let email {
                claims["email"] = .string(email)
                claims["email_verified"] = .bool(emailVerified)
            }
            if let name { claims["name"] = .string(name) }
        }
        return claims
    }
}
