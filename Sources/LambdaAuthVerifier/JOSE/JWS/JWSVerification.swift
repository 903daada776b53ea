/// The one way a JWS is verified, for every token we accept (ID tokens, our access tokens).
extension CompactJWS {
    /// Header checks that come before any key is looked up: no `crit` (we understand no
    /// extension, so RFC 7515 §4.1.11 obliges us to refuse), and an `alg` among `allowed`.
    /// `none`, HS* and everything else are UNSUPPORTED_ALGORITHM.
    public func checkAlgorithm(allowed: [JWSAlgorithm]) throws(AuthError) -> JWSAlgorithm {
        if header["crit"] != nil {
            throw AuthError(.unsupportedAlgorithm, "the token has a crit header, which is not supported")
        }
        guard let name = algorithm, let algorithm = JWSAlgorithm(rawValue: name), allowed.contains(algorithm) else {
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            throw AuthError(.unsupportedAlgorithm, "the token's alg must be \(names)")
        }
        return algorithm
    }

    /// The header's algorithm must be one of the key's (so a key never checks a signature of
    /// another kind), then the signature must verify. Claims are not looked at.
    public func verifySignature(with key: JSONWebKey) throws(AuthError) {
        let algorithm = try checkAlgorithm(allowed: key.algorithms)
        guard key.isValidSignature(signature, for: signingInput, algorithm: algorithm) else {
            throw AuthError(.invalidSignature, "the token's signature does not verify")
        }
    }
}
