import Crypto

/// `AUTH_CREDENTIALS=local`: STS-shaped credentials minted without AWS, checkable offline.
///
/// Everything derives from the master secret (AUTH_CREDENTIALS_SECRET) with HMAC-SHA256, so a
/// resource server holding the secret verifies a request without any table look-up:
/// - the session token carries `{v, akid, uid, prefix, exp}` and an HMAC over it, so it
///   authenticates the access key id, the user, the allowed S3 prefix and the expiry;
/// - the secret access key is an HMAC of the session token's payload, so it can be re-derived
///   from a presented token and checked against the request's SigV4 signature.
public struct LocalCredentialMinter: CredentialIssuer {
    static let tokenPrefix = "LAv1."
    let lifetime: Int64
    let random: any RandomSource
    // Derived once: the issuer is cached for the process, and each issue used to derive all
    // three again (half of minting's time in a warm refresh).
    let sessionTokenKey: SymmetricKey
    let secretKeys: (SymmetricKey, SymmetricKey)

    public init(masterSecret: String, lifetime: Int64, random: any RandomSource) {
        let master = SymmetricKey(data: Array(masterSecret.utf8))
        sessionTokenKey = LocalCredentialMinter.key("session-token", master)
        secretKeys = (LocalCredentialMinter.key("secret-access-key", master),
                      LocalCredentialMinter.key("secret-access-key-2", master))
        self.lifetime = lifetime
        self.random = random
    }

    public func issue(userID: String, now: Int64) throws(AuthError) -> TemporaryCredentials {
        let accessKeyID = "ASIA" + Base32.encode(random.bytes(10))  // 80 bits → 16 characters
        let claims = SessionTokenClaims(accessKeyID: accessKeyID, userID: userID, prefix: "users/\(userID)/", expiration: now + lifetime)
        let payload = claims.json.serializedBytes()
        let sessionToken = LocalCredentialMinter.tokenPrefix + Base64.urlEncoded(payload) + "."
            + Base64.urlEncoded(mac(sessionTokenKey, payload))
        return TemporaryCredentials(accessKeyID: accessKeyID, secretAccessKey: secret(for: payload),
                                    sessionToken: sessionToken, expiration: claims.expiration)
    }

    /// What a valid session token vouches for.
    public struct SessionTokenClaims: Sendable, Equatable {
        public var accessKeyID: String
        public var userID: String
        public var prefix: String
        public var expiration: Int64

        var json: JSONValue {
            ["v": 1, "akid": .string(accessKeyID), "uid": .string(userID), "prefix": .string(prefix), "exp": .number(expiration)]
        }
    }

    public enum VerificationFailure: Error, Equatable, CustomStringConvertible {
        case malformedSessionToken
        case badSessionTokenSignature
        case accessKeyMismatch
        case expired

        public var description: String {
            switch self {
            case .malformedSessionToken: return "the session token is malformed"
            case .badSessionTokenSignature: return "the session token was not issued with this secret or was altered"
            case .accessKeyMismatch: return "the session token belongs to another access key"
            case .expired: return "the credentials expired"
            }
        }
    }

    /// Authenticates a session token presented with `accessKeyID`; returns its claims and the
    /// secret access key to check the request signature with.
    public func open(sessionToken: String, accessKeyID: String, now: Int64) throws(VerificationFailure)
        -> (claims: SessionTokenClaims, secretAccessKey: String) {
        guard sessionToken.hasPrefix(LocalCredentialMinter.tokenPrefix) else { throw .malformedSessionToken }
        let parts = sessionToken.dropFirst(LocalCredentialMinter.tokenPrefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = Base64.urlDecoded(parts[0]), let tag = Base64.urlDecoded(parts[1]) else {
            throw .malformedSessionToken
        }
        guard HMAC<SHA256>.isValidAuthenticationCode(tag, authenticating: payload, using: sessionTokenKey) else {
            throw .badSessionTokenSignature
        }
        guard let json = try? JSONValue.parse(payload), json["v"] == 1,
              let akid = json["akid"]?.stringValue, let uid = json["uid"]?.stringValue,
              let prefix = json["prefix"]?.stringValue, let expiration = json["exp"]?.int64Value else {
            throw .malformedSessionToken
        }
        guard akid == accessKeyID else { throw .accessKeyMismatch }
        guard expiration > now else { throw .expired }
        return (SessionTokenClaims(accessKeyID: akid, userID: uid, prefix: prefix, expiration: expiration), secret(for: payload))
    }

    /// 40 characters, like an AWS secret access key.
    func secret(for payload: [UInt8]) -> String {
        String(Base64.encoded(mac(secretKeys.0, payload) + mac(secretKeys.1, payload)).prefix(40))
    }

    /// Separate keys per purpose, so a session-token MAC can never double as a secret.
    static func key(_ purpose: String, _ master: SymmetricKey) -> SymmetricKey {
        SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array("lambda-auth/\(purpose)".utf8), using: master))
    }

    func mac(_ key: SymmetricKey, _ data: [UInt8]) -> [UInt8] {
        HMAC<SHA256>.authenticationCode(for: data, using: key).bytes
    }
}
