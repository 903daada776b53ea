import Crypto

/// The passkey items of the single-table layout (docs/table-layout.md; keys spelled in `Keys`):
/// - the challenge: a sign-in's in a partition of its own (`Keys.passkeyChallenge`), a
///   registration's in the user's partition (`Keys.passkeyRegistrationChallenge`): purpose,
///   handle (registration), expiresAt, ttl;
/// - the user's handle (`Keys.passkeyHandle`), opaque: WebAuthn's user.id;
/// - the link (`Keys.identityLink`) every identity has, plus what an assertion is checked against
///   (public key, sign count, user handle, backup eligibility), so a sign-in reads one item for
///   the credential;
/// - the user's side (`Keys.userIdentity`), plus what `list` shows (name, lastUsedAt, backup
///   state, transports) and the credential id for excludeCredentials.
struct PasskeyStore: Sendable {
    let table: any Table

    /// A ceremony's challenge lives this long (contract section 15).
    static let challengeLifetime: Int64 = 300
    static let maximumPasskeysPerUser = 10

    enum Purpose: String { case register, authenticate }

    /// A credential id can be 1023 bytes; its SHA-256 keeps keys and subjects short and fixed.
    static func passkeyID(credentialID: [UInt8]) -> String { Base64.urlEncoded(SHA256.hash(data: credentialID)) }

    /// Where a challenge lives: a registration's (the only kind with a user) under its user.
    static func challengeKey(_ challenge: [UInt8], userID: String?) -> TableKey {
        userID.map { Keys.passkeyRegistrationChallenge($0, challenge) } ?? Keys.passkeyChallenge(challenge)
    }

    /// `handle`: for a registration, the user handle its options gave the authenticator.
    func putChallenge(_ challenge: [UInt8], purpose: Purpose, userID: String?, handle: [UInt8]? = nil, now: Int64) throws(AuthError) {
        precondition((purpose == .register) == (userID != nil), "a registration's challenge, and only it, belongs to a user")
        var item = Self.challengeKey(challenge, userID: userID).item
        item["purpose"] = .s(purpose.rawValue)
        if let handle { item["handle"] = .s(Base64.urlEncoded(handle)) }
        item["expiresAt"] = .n(now + Self.challengeLifetime)
        item["ttl"] = .n(now + Self.challengeLifetime)
        do { try table.putItem(item, condition: "attribute_not_exists(PK)", attributes: .init()) } catch { throw error.authError }
    }

    /// Deletes the challenge if it is unused, unexpired, of this purpose and (registration) this
    /// user's (its key says whose), issued with the handle being stored: the first action of the
    /// transaction that registers or opens the session, whose failure is CHALLENGE_EXPIRED.
    static func consumeChallenge(_ challenge: [UInt8], purpose: Purpose, userID: String?, handle: [UInt8]? = nil,
                                 now: Int64) -> TransactWriteAction {
        var condition = "attribute_exists(PK) AND purpose = :purpose AND expiresAt > :now"
        var values: [String: AttributeValue] = [":purpose": .s(purpose.rawValue), ":now": .n(now)]
        if let handle {
            condition += " AND handle = :handle"
            values[":handle"] = .s(Base64.urlEncoded(handle))
        }
        return .delete(key: challengeKey(challenge, userID: userID), condition: condition, attributes: ExpressionAttributes(values: values))
    }

    static let challengeExpired = AuthError(.challengeExpired, "the challenge is unknown, used or expired; ask for new options")

    static func handleItem(_ userID: String, handle: [UInt8]) -> Item {
        var item = Keys.passkeyHandle(userID).item
        item["handle"] = .s(Base64.urlEncoded(handle))
        return item
    }

    /// The user's handle, created on first use: 32 random bytes, never derived from the user id.
    /// A guest's vanishes with the guest (`expiresAt`: its `ttl`) unless a passkey upgrades it.
    func userHandle(of userID: String, random: any RandomSource, expiresAt: Int64? = nil) throws(AuthError) -> [UInt8] {
        if let stored = try existingUserHandle(of: userID) { return stored }
        let handle = random.bytes(32)
        var item = Self.handleItem(userID, handle: handle)
        if let expiresAt { item["ttl"] = .n(expiresAt) }
        do {
            try table.putItem(item, condition: "attribute_not_exists(PK)", attributes: .init())
            return handle
        } catch .conditionFailed {
            // A concurrent first use wrote one: it is the user's.
            guard let stored = try table.read(Keys.passkeyHandle(userID))?["handle"]?.stringValue.flatMap(Base64.urlDecoded) else {
                throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "the passkey handle vanished")
            }
            return stored
        } catch {
            throw error.authError
        }
    }

    /// The handle if the user has one; never creates one (a registration must write nothing
    /// before its transaction).
    func existingUserHandle(of userID: String) throws(AuthError) -> [UInt8]? {
        try table.read(Keys.passkeyHandle(userID))?["handle"]?.stringValue.flatMap(Base64.urlDecoded)
    }

    /// A stored passkey as a sign-in finds it by credential id.
    struct Credential {
        var passkeyID: String
        var userID: String
        var stored: StoredCredential
    }

    func credential(passkeyID: String) throws(AuthError) -> Credential? {
        guard let item = try table.read(Keys.identityLink(.passkey, passkeyID)),
              let userID = item["userId"]?.stringValue,
              let key = item["publicKey"]?.stringValue.flatMap(Base64.urlDecoded),
              let count = item["signCount"]?.int64Value, let handle = item["userHandle"]?.stringValue.flatMap(Base64.urlDecoded) else { return nil }
        return Credential(passkeyID: passkeyID, userID: userID,
                          stored: StoredCredential(publicKeyBytes: key, signCount: UInt32(clamping: count), userHandle: handle,
                                                   backupEligible: item["backupEligible"]?.boolValue ?? false))
    }

    enum AssertionStep: Equatable { case challenge, signCount, userSide }

    /// The assertion's writes: the challenge consumed, the count moved on from the one read (two
    /// assertions of one count cannot both pass), the user's side marked used.
    static func assertionWrites(challenge: [UInt8], credential: Credential, assertion: VerifiedAssertion,
                                now: Int64) -> TransactionPlan<AssertionStep> {
        var plan = TransactionPlan<AssertionStep>()
        plan.add(.challenge, consumeChallenge(challenge, purpose: .authenticate, userID: nil, now: now))
        plan.add(.signCount, .update(
            key: Keys.identityLink(.passkey, credential.passkeyID), update: "SET signCount = :count",
            condition: "userId = :user AND signCount = :read",
            attributes: ExpressionAttributes(values: [":count": .n(Int64(assertion.signCount)), ":user": .s(credential.userID),
                                                      ":read": .n(Int64(credential.stored.signCount))])))
        plan.add(.userSide, .update(
            key: Keys.userIdentity(credential.userID, .passkey, subject: credential.passkeyID),
            update: "SET lastUsedAt = :now, backedUp = :backedUp", condition: "attribute_exists(PK)",
            attributes: ExpressionAttributes(values: [":now": .s(Timestamps.format(now)), ":backedUp": .bool(assertion.backedUp)])))
        return plan
    }

    /// Why `assertionWrites` were refused.
    static func assertionRefusal(_ cancellation: TransactionPlan<AssertionStep>.Cancellation) -> AuthError {
        if cancellation.failed(.challenge) { return challengeExpired }
        if cancellation.failed(.signCount) { return AuthError(.passkeyInvalid, "signCount was used by a concurrent sign-in with this passkey") }
        return AuthError(.passkeyInvalid, "the passkey was deleted")
    }

    /// The passkeys a user's side lists.
    struct Listed {
        var passkeyID: String
        var credentialID: [UInt8]
        var name: String
        var createdAt: Int64
        var lastUsedAt: Int64?
        var transports: [String]
    }

    func passkeys(of userID: String) throws(AuthError) -> [Listed] {
        let items = try table.queryAll(QueryRequest(
            keyCondition: "PK = :pk AND begins_with(SK, :prefix)",
            attributes: ExpressionAttributes(values: [":pk": .s(Keys.user(userID)), ":prefix": .s(Keys.passkeyIdentityPrefix)])))
        return items.compactMap { item -> Listed? in
            guard let id = item["subject"]?.stringValue, let linkedAt = item["linkedAt"].flatMap(Timestamps.parse) else { return nil }
            let transports: [String]
            if case .l(let values)? = item["transports"] { transports = values.compactMap(\.stringValue) } else { transports = [] }
            return Listed(passkeyID: id, credentialID: item["credentialId"]?.stringValue.flatMap(Base64.urlDecoded) ?? [],
                          name: item["name"]?.stringValue ?? "Passkey", createdAt: linkedAt,
                          lastUsedAt: item["lastUsedAt"].flatMap(Timestamps.parse), transports: transports)
        }.sorted { ($0.createdAt, $0.passkeyID) < ($1.createdAt, $1.passkeyID) }
    }

    /// A registration as the user's new identity (`AccountStore.addIdentity`): the challenge
    /// consumed first, both sides of the link with a passkey's attributes, and, when it makes a
    /// guest a full user, the handle written again without its `ttl`.
    static func addition(_ registration: VerifiedRegistration, identity: LinkedIdentity, challenge: [UInt8], name: String,
                         handle: [UInt8], userID: String, now: Int64) -> AccountStore.IdentityAddition {
        let credentialID = AttributeValue.s(Base64.urlEncoded(registration.credentialID))
        let link: Item = ["credentialId": credentialID, "publicKey": .s(Base64.urlEncoded(registration.publicKeyBytes)),
                          "algorithm": .n(registration.algorithm.rawValue), "signCount": .n(Int64(registration.signCount)),
                          "userHandle": .s(Base64.urlEncoded(handle)), "backupEligible": .bool(registration.backupEligible)]
        let userSide: Item = ["credentialId": credentialID, "name": .s(name), "lastUsedAt": .null, "backedUp": .bool(registration.backedUp),
                              "transports": .l(registration.transports.map(AttributeValue.s)),
                              "attestationFormat": .s(registration.attestationFormat)]
        return AccountStore.IdentityAddition(
            identity: identity, provenBy: nil, linkAttributes: link, userSideAttributes: userSide,
            ceremony: [consumeChallenge(challenge, purpose: .register, userID: userID, handle: handle, now: now)],
            upgradeWrites: [.put(handleItem(userID, handle: handle))])
    }
}
