/// The two documents a resource server (API Gateway's JWT authorizer, an OIDC library) needs to
/// verify our access tokens: the discovery document, which names the issuer and where its keys
/// are, and the public JWKS.
public struct DiscoveryDocuments: Sendable {
    public enum Document: String, Sendable, CaseIterable {
        case openIDConfiguration = "openid-configuration"
        case jwks

        /// The path under the issuer's URL.
        public var path: String {
            switch self {
            case .openIDConfiguration: return "/.well-known/openid-configuration"
            case .jwks: return "/.well-known/jwks.json"
            }
        }
    }

    /// How long a resource server may keep them: also the wait between publishing a new key and
    /// signing with it (docs/keys-and-secrets.md, "Key rotation").
    public static let cacheSeconds = 300

    public let issuer: String

    public init(issuer: String) {
        self.issuer = issuer
    }

    /// `jwks_uri` is derived from the issuer, as OIDC discovery expects of an `https://` issuer;
    /// only what is true of our tokens is claimed (no authorization or token endpoint: sign-in is
    /// our own `signin`, not an OAuth flow, so `response_types_supported` would be a lie).
    /// `algorithms`: those of the published keys (RS256 when there is none yet: the dev key's).
    public func openIDConfiguration(algorithms: [JWSAlgorithm]) -> JSONValue {
        let names = (algorithms.isEmpty ? [.rs256] : algorithms).map { JSONValue.string($0.rawValue) }
        return [
            "issuer": .string(issuer),
            "jwks_uri": .string(AccessTokenVerifier.jwksURL(issuer: issuer)),
            "id_token_signing_alg_values_supported": .array(names),
            "subject_types_supported": ["public"],
            "claims_supported": ["iss", "aud", "sub", "sid", "iat", "exp", "jti"],
        ]
    }

    /// `keys`: nil while there is none yet (the local store's dev key before the first sign-in).
    public func document(_ document: Document, keys: AccessTokenKeySet?) -> JSONValue {
        switch document {
        case .openIDConfiguration: return openIDConfiguration(algorithms: keys?.algorithms ?? [])
        case .jwks: return keys?.jwks ?? ["keys": []]
        }
    }
}
