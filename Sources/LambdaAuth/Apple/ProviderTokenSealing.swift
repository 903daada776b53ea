import Crypto

/// Apple's refresh token at rest: AES-256-GCM under AUTH_DATA_KEY, with associated data binding
/// the ciphertext to the user and the Apple subject, so a sealed token copied into another
/// user's item (or another identity's) does not open.
struct ProviderTokenSealing: Sendable {
    let key: SymmetricKey

    static func associatedData(userID: String, provider: ProviderName, subject: String) -> [UInt8] {
        Array("lambda-auth/provider-token/v1\u{0}\(provider.rawValue)\u{0}\(userID)\u{0}\(subject)".utf8)
    }

    /// nonce || ciphertext || tag, base64.
    func seal(_ token: String, userID: String, provider: ProviderName, subject: String) throws(AuthError) -> String {
        do {
            let box = try AES.GCM.seal(Array(token.utf8), using: key,
                                       authenticating: ProviderTokenSealing.associatedData(userID: userID, provider: provider, subject: subject))
            guard let combined = box.combined else { throw AuthError(.internal, "internal error") }
            return Base64.encoded(combined)
        } catch {
            throw AuthError(.internal, "internal error", detail: "sealing a provider token failed")
        }
    }

    /// nil when it does not open: another key, user or subject, or altered bytes.
    func open(_ sealed: String, userID: String, provider: ProviderName, subject: String) -> String? {
        guard let combined = Base64.decoded(sealed),
              let box = try? AES.GCM.SealedBox(combined: combined),
              let plain = try? AES.GCM.open(box, using: key,
                                            authenticating: ProviderTokenSealing.associatedData(userID: userID, provider: provider, subject: subject))
        else { return nil }
        return String(validating: Array(plain), as: UTF8.self)
    }
}
