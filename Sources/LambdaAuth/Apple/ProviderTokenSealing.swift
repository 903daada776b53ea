/// Apple's refresh token at rest: sealed under the data keys (AUTH_DATA_KEYS), with associated
/// data binding the ciphertext to the user and the Apple subject, so a sealed token copied into
/// another user's item (or another identity's) does not open.
struct ProviderTokenSealing: Sendable {
    let keys: DataKeys

    static func associatedData(userID: String, provider: ProviderName, subject: String) -> [UInt8] {
        Array("lambda-auth/provider-token/v1\u{0}\(provider.rawValue)\u{0}\(userID)\u{0}\(subject)".utf8)
    }

    func seal(_ token: String, userID: String, provider: ProviderName, subject: String) throws(AuthError) -> String {
        try keys.seal(token, context: ProviderTokenSealing.associatedData(userID: userID, provider: provider, subject: subject))
    }

    /// nil when it does not open: no listed key, another user or subject, or altered bytes.
    func open(_ sealed: String, userID: String, provider: ProviderName, subject: String) -> String? {
        keys.open(sealed, context: ProviderTokenSealing.associatedData(userID: userID, provider: provider, subject: subject))
    }

    func open(_ record: ProviderTokenRecord) -> (plaintext: String, isUnderFirstKey: Bool)? {
        keys.opened(record.sealedToken, context: ProviderTokenSealing.associatedData(userID: record.userID, provider: record.provider,
                                                                                     subject: record.subject))
    }

    /// The answer at request time to a stored value no listed key opens: the operator dropped a
    /// key from AUTH_DATA_KEYS too early (or changed AUTH_DATA_KEY), and only they can fix it.
    static func unopenable(userID: String) -> AuthError {
        AuthError(.configError, "\(DataKeys.variable) opens no stored Apple token of this user (was a key removed before `authctl keys reseal`?)",
                  detail: "user \(userID)")
    }
}
