/// A provider's refresh token kept for a user (today: Apple's, to revoke it when the account or
/// the Apple identity goes), sealed by the caller before it gets here.
struct ProviderTokenRecord: Sendable {
    var userID: String
    var provider: ProviderName
    /// The identity the token was issued for (bound into the sealing).
    var subject: String
    /// The client id the token was issued to: revocation must name the same one.
    var clientID: String
    var sealedToken: String
    var createdAt: Int64
}

extension ProviderTokenRecord {
    init?(item: Item) {
        guard let userID = item["PK"]?.stringValue.flatMap(Keys.userID(partition:)),
              let provider = item["SK"]?.stringValue.flatMap({ Keys.suffix(of: $0, after: Keys.providerTokenPrefix) }).flatMap(ProviderName.init(rawValue:)),
              let subject = item["subject"]?.stringValue, let clientID = item["clientId"]?.stringValue,
              let sealed = item["sealedToken"]?.stringValue else { return nil }
        self.userID = userID
        self.provider = provider
        self.subject = subject
        self.clientID = clientID
        sealedToken = sealed
        createdAt = item["createdAt"].flatMap(Timestamps.parse) ?? 0
    }

    var item: Item {
        var item = Keys.providerToken(userID, provider).item
        item["subject"] = .s(subject)
        item["clientId"] = .s(clientID)
        item["sealedToken"] = .s(sealedToken)
        item["createdAt"] = .s(Timestamps.format(createdAt))
        return item
    }
}

extension AccountStore {
    func providerToken(userID: String, provider: ProviderName) throws(AuthError) -> ProviderTokenRecord? {
        try table.read(Keys.providerToken(userID, provider)).flatMap(ProviderTokenRecord.init(item:))
    }

    /// Replaces the user's token of that provider. Conditional on the profile existing and not
    /// being deleted, so a token never lands in the partition of an account deleted meanwhile.
    /// False when the user is gone.
    func keep(_ record: ProviderTokenRecord) throws(AuthError) -> Bool {
        let actions: [TransactWriteAction] = [
            .conditionCheck(key: Keys.profileKey(record.userID), condition: "attribute_exists(PK) AND attribute_not_exists(deletionRequestedAt)"),
            .put(record.item),
        ]
        return try table.transact(actions) == nil
    }
}
