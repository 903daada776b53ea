/// The keys second-factor secrets are sealed under: AUTH_DATA_KEYS, or on the local store a dev
/// data key kept inside it (created by the first enrolment). On DynamoDB AUTH_MFA=optional
/// requires AUTH_DATA_KEYS (`AuthConfiguration.validateCombinations`).
struct SecondFactorSealing: Sendable {
    let keys: ConfiguredOrStoredKey<DataKeys>

    func seal(_ secret: [UInt8], userID: String) throws(AuthError) -> String {
        guard let keys = try keys.key(create: true) else { throw AuthError.internalError("no data key for second-factor secrets") }
        return try keys.seal(Base32.encode(secret), context: SecondFactorRecord.sealingContext(userID: userID))
    }

    /// The factor's secret. A secret no listed key opens is the operator's to fix (a data key
    /// dropped too soon): INTERNAL naming AUTH_DATA_KEYS in the log, never a wrong code.
    func open(_ factor: SecondFactorRecord) throws(AuthError) -> [UInt8] {
        guard let keys = try keys.key(create: false),
              let text = keys.open(factor.sealedSecret, context: SecondFactorRecord.sealingContext(userID: factor.userID)),
              let secret = Base32.decoded(text) else {
            throw AuthError.internalError("\(DataKeys.variable) has no key that opens user \(factor.userID)'s second-factor secret")
        }
        return secret
    }
}
