/// A provider's published keys (RFC 7517 §5), reduced to the ones that can verify its tokens,
/// indexed by `kid` (the only way a key is ever chosen).
public struct JSONWebKeySet: Sendable {
    /// Usable keys by `kid`. A key without a `kid` cannot be selected and is left out; when two
    /// usable keys share a `kid`, the first one published is kept.
    public let keys: [String: JSONWebKey]
    /// Keys present in the document but unusable for every one of the algorithms (other kty/use/alg,
    /// too short, no kid).
    public let ignoredCount: Int

    public struct Unusable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Parses a JWKS document. Not JSON, no `keys` array, or not one usable key: the whole
    /// document is unusable, so that a broken response never replaces keys that work.
    public init(parsing document: [UInt8], algorithm: JWSAlgorithm) throws(Unusable) {
        try self.init(parsing: document, algorithms: [algorithm])
    }

    public init(_ document: JSONValue, algorithm: JWSAlgorithm) throws(Unusable) {
        try self.init(document, algorithms: [algorithm])
    }

    /// `algorithms`: each key is read for those of them its `kty`, `crv` and `alg` (when present)
    /// allow, so one set can hold RSA and EC keys (our access tokens after a rotation between
    /// the two, a provider's mixed set); a key still verifies only tokens of its algorithms.
    public init(parsing document: [UInt8], algorithms: [JWSAlgorithm]) throws(Unusable) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(document)
        } catch {
            throw Unusable(description: "the JWKS is not valid JSON (\(error))")
        }
        try self.init(value, algorithms: algorithms)
    }

    public init(_ document: JSONValue, algorithms: [JWSAlgorithm]) throws(Unusable) {
        guard let list = document["keys"]?.arrayValue else {
            throw Unusable(description: "the JWKS has no keys array")
        }
        var keys: [String: JSONWebKey] = [:]
        var ignored = 0
        for entry in list {
            let usable = try? JSONWebKey(entry, forAnyOf: algorithms)
            guard let key = usable, let keyID = key.keyID, keys[keyID] == nil else {
                ignored += 1
                continue
            }
            keys[keyID] = key
        }
        guard !keys.isEmpty else {
            let names = algorithms.map(\.rawValue).joined(separator: "/")
            throw Unusable(description: "the JWKS has no usable \(names) key with a kid")
        }
        self.keys = keys
        ignoredCount = ignored
    }

    public func key(id: String) -> JSONWebKey? { keys[id] }
}
