/// The access-token keys of one deployment, in order: the first signs, every one verifies and is
/// published. Rotation is a change of this list (docs/keys-and-secrets.md, "Key rotation"): a new key is added second
/// (published, not yet signing), moved first, and the old one removed once no token it signed
/// can still be unexpired.
public struct AccessTokenKeySet: Sendable {
    /// Never empty.
    public let keys: [AccessTokenKey]

    public init(_ keys: [AccessTokenKey]) {
        precondition(!keys.isEmpty, "an access-token key set needs a signing key")
        self.keys = keys
    }

    public var signing: AccessTokenKey { keys[0] }

    public func key(id: String) -> AccessTokenKey? {
        keys.first { $0.keyID == id }
    }

    /// The algorithms of the published keys, each once, the signing key's first: what `well-known`
    /// names in `id_token_signing_alg_values_supported`.
    public var algorithms: [JWSAlgorithm] {
        keys.reduce(into: []) { list, key in
            if !list.contains(key.algorithm) { list.append(key.algorithm) }
        }
    }

    /// The public JWKS: what `well-known` serves and `authctl jwks` prints.
    public var jwks: JSONValue { ["keys": .array(keys.map(\.publicJWK))] }

    /// Parses concatenated PEM private keys (`AUTH_SIGNING_KEYS`): RSA (2048 to 4096 bits) or P-256,
    /// PKCS#8 or traditional, mixed in any order. Every failure is a CONFIG_ERROR naming `variable`
    /// and the key's position, never the key itself.
    public static func parse(pem text: String, variable: String) throws(AuthError) -> AccessTokenKeySet {
        let blocks = try pemBlocks(text, variable: variable)
        guard !blocks.isEmpty else {
            throw AuthError(.configError, "\(variable) holds no PEM private key")
        }
        var keys: [AccessTokenKey] = []
        for (index, block) in blocks.enumerated() {
            let key: AccessTokenKey
            do {
                key = AccessTokenKey(try JWSSigningKey(pem: block))
            } catch {
                throw AuthError(.configError, "\(variable): key \(index + 1) of \(blocks.count) \(error.description)")
            }
            if let first = keys.firstIndex(where: { $0.keyID == key.keyID }) {
                throw AuthError(.configError, "\(variable): key \(index + 1) is the same key as key \(first + 1)")
            }
            keys.append(key)
        }
        return AccessTokenKeySet(keys)
    }

    /// The `-----BEGIN …-----` … `-----END …-----` blocks of `text`; anything else but whitespace
    /// between them is refused, so that a truncated or mangled value is not half read.
    static func pemBlocks(_ text: String, variable: String) throws(AuthError) -> [String] {
        // Searched as bytes: String.firstRange(of:) cost a new process some 400,000 instructions
        // of runtime type look-ups at its first use (callgrind), a sixth of its start-up.
        let bytes = Array(text.utf8)
        func find(_ marker: String, from start: Int) -> Range<Int>? {
            let needle = Array(marker.utf8)
            var index = start
            while index + needle.count <= bytes.count {
                if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index..<(index + needle.count) }
                index += 1
            }
            return nil
        }
        func isBlank(_ range: Range<Int>) -> Bool {
            String(decoding: bytes[range], as: UTF8.self).allSatisfy(\.isWhitespace)
        }
        var blocks: [String] = []
        var rest = 0
        while true {
            guard let begin = find("-----BEGIN ", from: rest) else {
                guard isBlank(rest..<bytes.count) else { throw AuthError(.configError, "\(variable) has text outside its PEM blocks") }
                return blocks
            }
            guard isBlank(rest..<begin.lowerBound) else { throw AuthError(.configError, "\(variable) has text outside its PEM blocks") }
            guard let end = find("-----END ", from: begin.upperBound), let close = find("-----", from: end.upperBound) else {
                throw AuthError(.configError, "\(variable): PEM block \(blocks.count + 1) has no END line")
            }
            blocks.append(String(decoding: bytes[begin.lowerBound..<close.upperBound], as: UTF8.self))
            rest = close.upperBound
        }
    }
}
