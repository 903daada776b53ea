/// The user's TOTP factor (`Keys.secondFactor`): pending from `totp-enroll` until `totp-confirm`,
/// then active. It holds the secret sealed under AUTH_DATA_KEYS, the last step that signed in
/// (no step is accepted twice) and the recovery codes' keyed hashes, a map so that using one is
/// a conditional `REMOVE` of its entry: two uses at once, one wins.
struct SecondFactorRecord: Sendable {
    enum Status: String, Sendable { case pending, active }

    var userID: String
    var status: Status
    var sealedSecret: String
    var createdAt: Int64
    /// The newest TOTP step accepted; a code of this step or an older one is refused.
    var lastUsedStep: Int64
    var recoveryCodeHashes: Set<String>

    var isActive: Bool { status == .active }

    /// A pending factor nobody confirms leaves by itself.
    static let pendingLifetime: Int64 = 3600

    init(userID: String, sealedSecret: String, now: Int64) {
        self.userID = userID
        self.status = .pending
        self.sealedSecret = sealedSecret
        self.createdAt = now
        self.lastUsedStep = 0
        self.recoveryCodeHashes = []
    }

    init?(item: Item) {
        guard item["SK"]?.stringValue == Keys.secondFactorSortKey,
              let userID = item["PK"]?.stringValue.flatMap(Keys.userID(partition:)),
              let status = item["status"]?.stringValue.flatMap(Status.init(rawValue:)),
              let sealed = item["sealedSecret"]?.stringValue else { return nil }
        self.userID = userID
        self.status = status
        self.sealedSecret = sealed
        createdAt = item["createdAt"].flatMap(Timestamps.parse) ?? 0
        lastUsedStep = item["lastUsedStep"]?.int64Value ?? 0
        recoveryCodeHashes = Set((item["recoveryCodes"]?.mapValue ?? [:]).keys)
    }

    /// A pending factor's item, with the `ttl` that removes it unconfirmed.
    func pendingItem(now: Int64) -> Item {
        var item = Keys.secondFactor(userID).item
        item["status"] = .s(status.rawValue)
        item["sealedSecret"] = .s(sealedSecret)
        item["createdAt"] = .s(Timestamps.format(now))
        item["lastUsedStep"] = .n(lastUsedStep)
        item["ttl"] = .n(now + SecondFactorRecord.pendingLifetime)
        return item
    }

    static func recoveryCodesValue(_ hashes: [String]) -> AttributeValue {
        .m(Dictionary(uniqueKeysWithValues: hashes.map { ($0, AttributeValue.n(1)) }))
    }

    /// The context the secret is sealed under: a sealed secret copied to another user opens nowhere.
    static func sealingContext(userID: String) -> [UInt8] { Array("lambda-auth-mfa-totp-v1\u{0}\(userID)".utf8) }
}

/// A sign-in waiting for its second factor (`Keys.mfaChallenge`): what the `mfaToken` names.
/// It keeps the proven identity (never a token) so that `challenge` opens the session the
/// sign-in would have opened, for the same provider and device.
struct MFAChallengeRecord: Sendable {
    var userID: String
    var hash: String
    var identity: VerifiedIdentity
    var profileName: String?
    var device: [String: String]
    /// The sign-in joined this user by verified email: the challenge links the identity.
    var joining: Bool
    var firstFactor: Assurance
    var attempts: Int64
    var expiresAt: Int64

    /// Wrong codes an mfaToken survives (contract section 21).
    static let maximumAttempts: Int64 = 5
    static let lifetime: Int64 = 300
    /// Live challenges one user may have at once: each is an item of the user's partition, which
    /// every sign-in reads.
    static let maximumLive = 10

    func isLive(now: Int64) -> Bool { expiresAt > now && attempts < MFAChallengeRecord.maximumAttempts }

    init(userID: String, hash: String, proof: ProvenIdentity, device: [String: String], joining: Bool, now: Int64) {
        self.userID = userID
        self.hash = hash
        self.identity = proof.identity
        self.profileName = proof.profileName
        self.device = device
        self.joining = joining
        self.firstFactor = Assurance.of(proof)
        self.attempts = 0
        self.expiresAt = now + MFAChallengeRecord.lifetime
    }

    init?(item: Item) {
        guard let userID = item["PK"]?.stringValue.flatMap(Keys.userID(partition:)),
              let hash = item["SK"]?.stringValue.flatMap({ Keys.suffix(of: $0, after: Keys.mfaChallengePrefix) }),
              let provider = item["provider"]?.stringValue.flatMap(ProviderName.init(rawValue:)),
              let subject = item["subject"]?.stringValue, let expiresAt = item["expiresAt"]?.int64Value else { return nil }
        self.userID = userID
        self.hash = hash
        identity = VerifiedIdentity(provider: provider, subject: subject, email: item["email"]?.stringValue,
                                    emailVerified: item["emailVerified"]?.boolValue == true,
                                    isPrivateEmail: item["isPrivateEmail"]?.boolValue == true,
                                    name: item["name"]?.stringValue, picture: item["picture"]?.stringValue, claims: [:])
        profileName = item["profileName"]?.stringValue
        var device: [String: String] = [:]
        for (name, value) in item["device"]?.mapValue ?? [:] {
            if let text = value.stringValue { device[name] = text }
        }
        self.device = device
        joining = item["joining"]?.boolValue == true
        firstFactor = Assurance(item: item)
        attempts = item["attempts"]?.int64Value ?? 0
        self.expiresAt = expiresAt
    }

    var item: Item {
        var item = Keys.mfaChallenge(userID, hash: hash).item
        item["provider"] = .s(identity.provider.rawValue)
        item["subject"] = .s(identity.subject)
        if let email = identity.email { item["email"] = .s(email) }
        item["emailVerified"] = .bool(identity.emailVerified)
        if identity.isPrivateEmail { item["isPrivateEmail"] = .bool(true) }
        if let name = identity.name { item["name"] = .s(name) }
        if let picture = identity.picture { item["picture"] = .s(picture) }
        if let profileName { item["profileName"] = .s(profileName) }
        item["device"] = .m(device.mapValues(AttributeValue.s))
        if joining { item["joining"] = .bool(true) }
        firstFactor.store(in: &item)
        item["attempts"] = .n(attempts)
        item["expiresAt"] = .n(expiresAt)
        item["ttl"] = .n(expiresAt)
        return item
    }
}

/// What the user's Query finds of the second factor beside the profile: the factor, the pending
/// sign-ins' challenges and the wrong-code counter, all in the user's partition between the
/// identities and PROFILE, so that neither a sign-in nor a challenge pays a read for them.
struct SecondFactorItems: Sendable {
    var factor: SecondFactorRecord?
    var challenges: [MFAChallengeRecord] = []
    var wrongCodeCounter: Item?

    var hasActiveFactor: Bool { factor?.isActive == true }

    /// Takes `item` if it is one of these kinds.
    mutating func collect(_ item: Item) {
        guard let sk = item["SK"]?.stringValue, sk.hasPrefix(Keys.mfaPrefix) else { return }
        if sk == Keys.secondFactorSortKey {
            factor = SecondFactorRecord(item: item)
        } else if sk == Keys.mfaWrongCodesSortKey {
            wrongCodeCounter = item
        } else if let challenge = MFAChallengeRecord(item: item) {
            challenges.append(challenge)
        }
    }
}
