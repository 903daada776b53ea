import Crypto
import Logging

/// The development defaults the contract allows for the local store: an access-token signing key
/// and a credentials master secret, created once inside the store itself (so that every process
/// sharing the store agrees on them) when none is configured.
///
/// They are table items (`Keys.devSecrets`) so that two processes creating them at once settle on
/// one through a conditional put. Reading never creates them: a request that fails must leave the
/// store byte-identical, so only issuing paths pass `create: true`.
enum DevSecrets {
    /// The dev keys, the signing one first: RS256, as the template's keys are, so that tokens of
    /// `make demo` and `authctl serve` pass API Gateway's rules too; then the ES256 key of a store
    /// made before RS256, still published and accepted (a rotation that needs no one's help). nil
    /// when there is none yet and `create` is false.
    static func signingKeys(in table: any Table, create: Bool, now: Int64, logger: Logger) throws(AuthError) -> AccessTokenKeySet? {
        let value = try load(Keys.devSigningKey, attribute: "pem", in: table, create: create, now: now) {
            AccessTokenKey.generate(.rs256).pemRepresentation
        }
        if value?.created == true {
            logger.warning("created a development access-token signing key inside the local store; set AUTH_SIGNING_KEYS (or AUTH_SIGNING_KEYS_FILE) in production")
        }
        let legacy = try table.read(Keys.devLegacySigningKey)?["pem"]?.stringValue
        var keys: [AccessTokenKey] = []
        for pem in [value?.text, legacy].compactMap({ $0 }) {
            do {
                keys.append(AccessTokenKey(try JWSSigningKey(pem: pem)))
            } catch {
                throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "the stored development signing key is damaged")
            }
        }
        return keys.isEmpty ? nil : AccessTokenKeySet(keys)
    }

    static func credentialsSecret(in table: any Table, create: Bool, now: Int64, random: any RandomSource,
                                  logger: Logger) throws(AuthError) -> String? {
        let value = try load(Keys.devCredentialsSecret, attribute: "secret", in: table, create: create, now: now) {
            Base64.urlEncoded(random.bytes(32))
        }
        if value?.created == true {
            logger.warning("created a development credentials secret inside the local store; set AUTH_CREDENTIALS_SECRET in production")
        }
        return value?.text
    }

    /// The key of the one-time codes' hashes (32 bytes) when AUTH_OTP_KEY is not set.
    static func oneTimeCodeKey(in table: any Table, create: Bool, now: Int64, random: any RandomSource,
                               logger: Logger) throws(AuthError) -> [UInt8]? {
        try randomKey(Keys.devOneTimeCodeKey, named: "one-time code key", variable: "AUTH_OTP_KEY", in: table, create: create, now: now,
                      random: random, logger: logger)
    }

    /// The data key of second-factor secrets (32 bytes) when AUTH_DATA_KEYS is not set: the local
    /// store only (AUTH_MFA=optional on DynamoDB requires AUTH_DATA_KEYS).
    static func secondFactorDataKey(in table: any Table, create: Bool, now: Int64, random: any RandomSource,
                                    logger: Logger) throws(AuthError) -> [UInt8]? {
        try randomKey(Keys.devSecondFactorDataKey, named: "data key for second-factor secrets", variable: "AUTH_DATA_KEYS", in: table,
                      create: create, now: now, random: random, logger: logger)
    }

    /// 32 random bytes kept as base64url under `key`, created by the first issuing use.
    private static func randomKey(_ key: TableKey, named name: String, variable: String, in table: any Table, create: Bool, now: Int64,
                                  random: any RandomSource, logger: Logger) throws(AuthError) -> [UInt8]? {
        let value = try load(key, attribute: "secret", in: table, create: create, now: now) {
            Base64.urlEncoded(random.bytes(32))
        }
        if value?.created == true {
            logger.warning("created a development \(name) inside the local store; set \(variable) in production")
        }
        guard let text = value?.text else { return nil }
        guard let bytes = Base64.urlDecoded(text), bytes.count == 32 else {
            throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "the stored development \(name) is damaged")
        }
        return bytes
    }

    private static func load(_ key: TableKey, attribute: String, in table: any Table, create: Bool, now: Int64,
                             make: () -> String) throws(AuthError) -> (text: String, created: Bool)? {
        if let text = try table.read(key)?[attribute]?.stringValue { return (text, false) }
        guard create else { return nil }
        var item = key.item
        let value = make()
        item[attribute] = .s(value)
        item["createdAt"] = .s(Timestamps.format(now))
        do {
            try table.putItem(item, condition: "attribute_not_exists(PK)", attributes: .init())
            return (value, true)
        } catch .conditionFailed {
            // Another process created it first; theirs is the one everybody uses.
            guard let text = try table.read(key)?[attribute]?.stringValue else {
                throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "dev secret vanished after a race")
            }
            return (text, false)
        } catch {
            throw error.authError
        }
    }
}
