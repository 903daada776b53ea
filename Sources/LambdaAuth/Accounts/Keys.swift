import Crypto

/// Every key the product stores or looks for, spelled once: the single-table layout of contract
/// section 6 and the items the contract leaves to us (codes, counters, challenges, replays, dev
/// secrets). Stored items and recorded scenarios depend on each byte here, so a spelling never
/// changes; a new kind of item adds its spelling here rather than beside the code that writes it.
///
/// | PK | SK | item |
/// | --- | --- | --- |
/// | `USER#<userId>` | `PROFILE` | the user (`UserProfile`) |
/// | `USER#<userId>` | `IDENTITY#<provider>`, `IDENTITY#passkey#<passkeyId>` | the user's side of a link |
/// | `USER#<userId>` | `SESSION#<sessionId>` | a session |
/// | `USER#<userId>` | `REFRESH#<familyId>.<generation>` (earlier tokens: `REFRESH#<tokenId>`; GSI1: `REFRESH#<hash>` / `REFRESH`) | a refresh token |
/// | `USER#<userId>` | `TOKEN#<provider>` | a provider's sealed refresh token |
/// | `USER#<userId>` | `WEBAUTHN#HANDLE` | the user's passkey handle |
/// | `USER#<userId>` | `WEBAUTHN#CHALLENGE#<challenge>` | a passkey registration's challenge |
/// | `USER#<userId>` | `MFA#TOTP` | the user's TOTP factor and its recovery codes' hashes |
/// | `USER#<userId>` | `MFA#WRONG_CODES` | the wrong second-factor codes of the last hour (a rate counter) |
/// | `USER#<userId>` | `MFA_CHALLENGE#<hash>` | a sign-in waiting for its second factor (its mfaToken's hash) |
/// | `IDENTITY#<provider>#<subject>` | `LINK` | the link an identity signs in by |
/// | `EMAIL#<email key>` | `USER` | the claim on a verified address |
/// | `OTP#<address>` | `CODE` | the live one-time code |
/// | `RATE#<scope>#<key>` | `SLOTS` | a rate-limit counter |
/// | `PASSKEY_CHALLENGE#<challenge>` | `CHALLENGE` | a passkey sign-in's challenge (no user yet) |
/// | `NOTIFICATION#apple#<hash>` | `REPLAY` | an Apple notification handled |
/// | `REVOKED#<hour>` | `<revokedAt, 12 digits>#SESSION#<sessionId>`, `…#USER#<userId>` | a revocation access tokens must hear of |
/// | `DEV#SECRETS` | `ACCESS_TOKEN_SIGNING_KEY_RS256`, … | the local store's dev secrets |
package enum Keys {
    // MARK: - A user's partition

    package static let userPrefix = "USER#"
    package static func user(_ userID: String) -> String { userPrefix + userID }
    /// The user id of a `USER#` partition key; nil for any other partition.
    static func userID(partition pk: String) -> String? { suffix(of: pk, after: userPrefix) }

    package static let profile = "PROFILE"
    package static func profileKey(_ userID: String) -> TableKey { TableKey(pk: user(userID), sk: profile) }

    package static let identityPrefix = "IDENTITY#"
    static let passkeyIdentityPrefix = identityPrefix + ProviderName.passkey.rawValue + "#"
    /// One item per provider, except passkeys: a user holds up to 10, each under its own id.
    package static func userIdentity(_ userID: String, _ provider: ProviderName, subject: String) -> TableKey {
        TableKey(pk: user(userID), sk: provider == .passkey ? passkeyIdentityPrefix + subject : identityPrefix + provider.rawValue)
    }
    /// The provider of a user-side identity's sort key (its subject is an attribute of the item).
    static func identityProvider(sortKey sk: String) -> ProviderName? {
        guard let rest = suffix(of: sk, after: identityPrefix) else { return nil }
        return sk.hasPrefix(passkeyIdentityPrefix) ? .passkey : ProviderName(rawValue: rest)
    }

    package static let sessionPrefix = "SESSION#"
    package static func session(_ userID: String, _ sessionID: String) -> TableKey {
        TableKey(pk: user(userID), sk: sessionPrefix + sessionID)
    }

    package static let refreshTokenPrefix = "REFRESH#"
    package static func refreshToken(_ userID: String, _ tokenID: String) -> TableKey {
        TableKey(pk: user(userID), sk: refreshTokenPrefix + tokenID)
    }
    /// The token id of a family's generation: a token names its own item, and a rotation its
    /// predecessor's, without reading anything.
    static func familyTokenID(_ familyID: String, generation: Int64) -> String { familyID + "." + String(generation) }
    /// What every generation's sort key of a family begins with.
    static func familyTokenPrefix(_ familyID: String) -> String { refreshTokenPrefix + familyID + "." }

    /// `TOKEN#` sorts after `PROFILE`'s bound, so the user query never reads these items.
    static let providerTokenPrefix = "TOKEN#"
    static func providerToken(_ userID: String, _ provider: ProviderName) -> TableKey {
        TableKey(pk: user(userID), sk: providerTokenPrefix + provider.rawValue)
    }

    /// WebAuthn's user.id for the user's passkeys.
    static func passkeyHandle(_ userID: String) -> TableKey { TableKey(pk: user(userID), sk: "WEBAUTHN#HANDLE") }

    /// A registration's challenge is the user's: in the user's partition, the account's deletion
    /// finds and deletes it with the rest (a partition of its own would hold the user id where
    /// no walk of the account reaches it). `WEBAUTHN#` sorts after the sign-in query's bound.
    static func passkeyRegistrationChallenge(_ userID: String, _ challenge: [UInt8]) -> TableKey {
        TableKey(pk: user(userID), sk: "WEBAUTHN#CHALLENGE#" + Base64.urlEncoded(challenge))
    }

    /// The second factor's items (contract section 21) sort between the identities and PROFILE
    /// ("IDENTITY#" < "MFA" < "PROFILE"), so the user's Query reads them: a sign-in learns of the
    /// factor, and a challenge finds its mfaToken and the wrong-code counter, with no read of their own.
    static let mfaPrefix = "MFA"
    static let secondFactorSortKey = "MFA#TOTP"
    static func secondFactor(_ userID: String) -> TableKey { TableKey(pk: user(userID), sk: secondFactorSortKey) }
    static let mfaWrongCodesSortKey = "MFA#WRONG_CODES"
    static func mfaWrongCodes(_ userID: String) -> TableKey { TableKey(pk: user(userID), sk: mfaWrongCodesSortKey) }
    static let mfaChallengePrefix = "MFA_CHALLENGE#"
    /// By the SHA-256 of the mfaToken's secret: the table never holds a usable token.
    static func mfaChallenge(_ userID: String, hash: String) -> TableKey { TableKey(pk: user(userID), sk: mfaChallengePrefix + hash) }

    /// Upper bound for a query that returns PROFILE and every IDENTITY# item of a user but none of
    /// the (possibly many) REFRESH# and SESSION# items: "IDENTITY#…" < "PROFILE" < "Q".
    static let profileAndIdentitiesUpperBound = "Q"

    // MARK: - The refresh-token index

    /// The table's one global secondary index, on `GSI1PK` / `GSI1SK`: refresh tokens by the hash
    /// of the whole token, for operators and for tokens of the first format.
    package static let tokenHashIndex = "GSI1"
    /// The same prefix as the tokens' sort keys.
    static let tokenHashIndexPrefix = refreshTokenPrefix
    package static func tokenHashIndexKey(hash: String) -> String { tokenHashIndexPrefix + hash }
    package static let tokenHashIndexSortKey = "REFRESH"

    // MARK: - Partitions of their own

    package static func identityLink(_ provider: ProviderName, _ subject: String) -> TableKey {
        TableKey(pk: identityPrefix + provider.rawValue + "#" + subject, sk: "LINK")
    }

    /// `key` is an `EmailKey`: the caller decides whether the address may be keyed at all.
    package static func email(_ key: String) -> TableKey { TableKey(pk: "EMAIL#" + key, sk: "USER") }

    /// The one live code of an address (its normalised, lowercased form).
    static func oneTimeCode(_ normalizedEmail: String) -> TableKey { TableKey(pk: "OTP#" + normalizedEmail, sk: "CODE") }

    static let rateCounterPrefix = "RATE#"
    /// The key is hashed when it could not be part of a key as it is (too long, or with `#`), so
    /// no caller input shapes keys.
    static func rateCounter(_ scope: RateLimitScope, key: String) -> TableKey {
        let plain = key.utf8.count <= 128 && !key.contains(text: "#") && key.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        let part = plain ? key : "sha256:" + SHA256.hexDigest(of: Array(key.utf8))
        return TableKey(pk: rateCounterPrefix + scope.name + "#" + part, sk: "SLOTS")
    }

    /// A sign-in's challenge, issued before anyone is known (registrations: `passkeyRegistrationChallenge`).
    static func passkeyChallenge(_ challenge: [UInt8]) -> TableKey {
        TableKey(pk: "PASSKEY_CHALLENGE#" + Base64.urlEncoded(challenge), sk: "CHALLENGE")
    }

    /// By the notification's `jti`, or the whole payload's hash without one.
    static func appleNotification(id: String) -> TableKey {
        TableKey(pk: "NOTIFICATION#apple#" + SHA256.hexDigest(of: Array(id.utf8)), sk: "REPLAY")
    }

    // MARK: - The revocation list

    /// One partition per hour of revocations (contract section 20): the list's read is a Query of
    /// the last `ceil(retention / bucket) + 1` partitions from `now - retention` on, so what it
    /// reads is the revocations of the last access-token lifetime, whatever the number of users.
    static let revocationBucketSeconds: Int64 = 3600
    static func revocationBucket(_ epochSeconds: Int64) -> String {
        "REVOKED#" + String(max(0, epochSeconds) / revocationBucketSeconds)
    }
    /// Time first, so that "revoked at or after" is a key condition; zero-padded so it sorts.
    static func revocationTime(_ epochSeconds: Int64) -> String {
        let digits = String(max(0, epochSeconds))
        return String(repeating: "0", count: max(0, 12 - digits.count)) + digits
    }
    static let revokedSessionMarker = "#SESSION#"
    static let revokedUserMarker = "#USER#"
    static func revokedSession(_ sessionID: String, at epochSeconds: Int64) -> TableKey {
        TableKey(pk: revocationBucket(epochSeconds), sk: revocationTime(epochSeconds) + revokedSessionMarker + sessionID)
    }
    static func revokedUser(_ userID: String, at epochSeconds: Int64) -> TableKey {
        TableKey(pk: revocationBucket(epochSeconds), sk: revocationTime(epochSeconds) + revokedUserMarker + userID)
    }

    // MARK: - The local store's dev secrets

    package static let devSecrets = "DEV#SECRETS"
    /// The dev key signs RS256, as the template's keys do.
    static let devSigningKey = TableKey(pk: devSecrets, sk: "ACCESS_TOKEN_SIGNING_KEY_RS256")
    /// The ES256 dev key of stores made before RS256: still published and accepted, never signing.
    static let devLegacySigningKey = TableKey(pk: devSecrets, sk: "ACCESS_TOKEN_SIGNING_KEY")
    static let devCredentialsSecret = TableKey(pk: devSecrets, sk: "CREDENTIALS_SECRET")
    static let devOneTimeCodeKey = TableKey(pk: devSecrets, sk: "OTP_KEY")
    /// The local store's data key for second-factor secrets when AUTH_DATA_KEYS is not set.
    static let devSecondFactorDataKey = TableKey(pk: devSecrets, sk: "MFA_DATA_KEY")

    // MARK: - Reading keys back

    /// What follows `prefix` in `key`; nil when `key` does not start with it.
    static func suffix(of key: String, after prefix: String) -> String? {
        key.hasPrefix(prefix) ? String(key.dropFirst(prefix.count)) : nil
    }
}
