import Crypto

/// The AES-256-GCM keys of values kept sealed at rest (`AUTH_DATA_KEYS`, or `AUTH_DATA_KEY` for a
/// single key). The first seals; every one opens, so a key can be rotated in without making
/// what the old one sealed unreadable (docs/keys-and-secrets.md, "Data-key rotation").
public struct DataKeys: Sendable {
    /// In the operator's order: `keys[0]` seals.
    private let keys: [SymmetricKey]

    init(_ keys: [[UInt8]]) {
        precondition(!keys.isEmpty && keys.allSatisfy { $0.count == 32 }, "data keys are 32 bytes, at least one")
        self.keys = keys.map { SymmetricKey(data: $0) }
    }

    /// Named in every message about a value no listed key opens: the operator's fix is there.
    public static let variable = "AUTH_DATA_KEYS"

    /// nil when neither variable is set. Both set, or an entry that is not 32 bytes of base64, is
    /// a CONFIG_ERROR naming the variable (never a value).
    public static func fromEnvironment(_ environment: [String: String]) throws(AuthError) -> DataKeys? {
        let reader = EnvironmentReader(environment)
        let single = reader.string("AUTH_DATA_KEY")
        let list = reader.string(variable)
        if single != nil, list != nil {
            throw AuthConfiguration.configError("AUTH_DATA_KEY", "and \(variable) are both set; set one (\(variable) for several keys)")
        }
        let name = list == nil ? "AUTH_DATA_KEY" : variable
        let entries = list == nil ? (single.map { [$0] } ?? []) : reader.list(variable)
        guard !entries.isEmpty else {
            if list != nil { throw AuthConfiguration.configError(variable, "names no key") }
            return nil
        }
        var decoded: [[UInt8]] = []
        for (position, entry) in entries.enumerated() {
            guard let key = Base64.decoded(entry.trimmingCharacters(in: " \n")), key.count == 32 else {
                let which = name == variable ? " (entry \(position + 1))" : ""
                throw AuthConfiguration.configError(name, "must be 32 bytes, base64\(which)")
            }
            decoded.append(key)
        }
        return DataKeys(decoded)
    }

    /// nonce || ciphertext || tag, base64, under the first key. `context` is authenticated, not
    /// stored: the same context must be given to open, so a sealed value copied elsewhere fails.
    public func seal(_ plaintext: String, context: [UInt8] = []) throws(AuthError) -> String {
        do {
            guard let combined = try AES.GCM.seal(Array(plaintext.utf8), using: keys[0], authenticating: context).combined else {
                throw AuthError.internalError()
            }
            return Base64.encoded(combined)
        } catch {
            throw .internalError("sealing a value failed")
        }
    }

    /// nil when no listed key opens it (another key, another context, or altered bytes).
    public func open(_ sealed: String, context: [UInt8] = []) -> String? {
        opened(sealed, context: context)?.plaintext
    }

    /// Also says whether the first key sealed it: a value sealed under an older key is re-sealed
    /// whenever it is written, and by `authctl keys reseal`.
    public func opened(_ sealed: String, context: [UInt8] = []) -> (plaintext: String, isUnderFirstKey: Bool)? {
        guard let combined = Base64.decoded(sealed), let box = try? AES.GCM.SealedBox(combined: combined) else { return nil }
        for (position, key) in keys.enumerated() {
            if let plain = try? AES.GCM.open(box, using: key, authenticating: context),
               let text = String(validating: Array(plain), as: UTF8.self) {
                return (text, position == 0)
            }
        }
        return nil
    }
}
