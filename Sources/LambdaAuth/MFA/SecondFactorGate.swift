import Crypto
import Logging

/// The second factor's half of the sign-in seam (`SignInFlow.openSession`): a user with an
/// active factor gets a pending challenge and 403 MFA_REQUIRED instead of a session, unless the
/// proof is two factors already (a passkey verified with UV, or a completed challenge). The
/// challenge is the only write (contract section 21).
struct SecondFactorGate: Sendable {
    let table: any Table
    let clock: any WallClock
    let random: any RandomSource

    /// Whether this sign-in waits for the second factor: the user has one, and the proof is one factor.
    func applies(to user: UserView, proof: ProvenIdentity) -> Bool {
        user.secondFactor.hasActiveFactor && Assurance.of(proof).level == .aal1
    }

    /// The refusal to throw (its mfaToken written), or nil when this sign-in may open its session.
    func challenge(for user: UserView, proof: ProvenIdentity, device: [String: String], joining: Bool,
                   logger: Logger) throws(AuthError) -> AuthError? {
        guard applies(to: user, proof: proof) else { return nil }
        let userID = user.profile.userID
        let now = clock.nowSeconds
        let live = user.secondFactor.challenges.filter { $0.isLive(now: now) }
        if live.count >= MFAChallengeRecord.maximumLive {
            var refusal = AuthError(.rateLimited, "too many sign-ins are waiting for a second factor; try again later",
                                    detail: "\(live.count) live mfa challenges")
            refusal.retryAfter = max(1, (live.map(\.expiresAt).min() ?? now + 1) - now)
            throw refusal.about(userID: userID, sessionID: nil)
        }
        let secret = random.bytes(32)
        let record = MFAChallengeRecord(userID: userID, hash: SHA256.hexDigest(of: secret), proof: proof, device: device,
                                        joining: joining, now: now)
        do {
            try table.putItem(record.item, condition: "attribute_not_exists(PK)", attributes: .init())
        } catch {
            throw error.authError
        }
        logger.info("sign-in waits for a second factor", metadata: ["userId": .string(userID), "provider": .string(proof.identity.provider.rawValue)])
        var required = AuthError(.mfaRequired, "this account has a second factor: complete the sign-in with the mfa challenge action")
        required.details = ["mfaToken": .string(MFAToken.spell(userID: userID, secret: secret)), "factors": ["totp", "recovery"]]
        return required.about(userID: userID, sessionID: nil)
    }
}

/// The opaque mfaToken: the user's id (which partition holds its challenge) and 256 random bits,
/// of which the table keeps only the SHA-256.
enum MFAToken {
    static func spell(userID: String, secret: [UInt8]) -> String { userID + "." + Base64.urlEncoded(secret) }

    /// The user id and the hash its challenge is stored under; nil for anything not of this form.
    static func parse(_ token: String) -> (userID: String, hash: String)? {
        guard let dot = token.utf8.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        let userID = String(token[..<dot])
        let secretText = token[token.index(after: dot)...]
        guard (1...128).contains(userID.utf8.count), userID.utf8.allSatisfy({ $0.isASCIIAlphanumeric(or: "-_") }),
              let secret = Base64.urlDecoded(secretText), secret.count == 32 else { return nil }
        return (userID, SHA256.hexDigest(of: secret))
    }
}
