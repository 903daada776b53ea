import Logging

extension RateLimitScope {
    /// Wrong second-factor codes per user per rolling hour (contract section 21: 10).
    public static let secondFactorWrongCodesPerUser = RateLimitScope("mfa-wrong-codes")
}

/// The `mfa` executable's flows (contract section 21): enrol and confirm a TOTP factor, complete
/// a sign-in that waits for it (`challenge`), raise a session to aal2 (`step-up`), and manage the
/// factor. Every code check counts against the user's wrong-code limit before it is tried, so a
/// right code never gets through once the limit is spent.
struct MFAFlow: Sendable {
    let settings: MFASettings
    let store: AccountStore
    let sealing: SecondFactorSealing
    let callerCheck: CallerCheck
    /// The sign-in a challenge completes, with the app's hooks it asks (`accessTokenClaims`).
    var signIn: SignInFlow
    let tokens: any TokenIssuing
    let limiter: TableRateLimiter
    let clock: any WallClock
    let random: any RandomSource
    let retry: OptimisticRetry

    static let wrongCodeLimit = RateLimit(10)

    func requireEnabled() throws(AuthError) {
        guard settings.isEnabled else { throw AuthError(.providerNotConfigured, "second factors are off (AUTH_MFA)") }
    }

    func authenticate(_ accessToken: String, logger: Logger) throws(AuthError) -> Caller {
        try callerCheck.check(accessToken, logger: logger)
    }

    // MARK: - Enrolment

    struct Enrolment {
        var secret: String
        var uri: String
    }

    /// A new pending factor (replacing a pending one); MFA_ALREADY_ENROLLED over an active one.
    func enroll(for caller: Caller, logger: Logger) throws(AuthError) -> Enrolment {
        if caller.user.secondFactor.hasActiveFactor { throw MFAFlow.alreadyEnrolled }
        let secret = random.bytes(TOTP.secretLength)
        let now = clock.nowSeconds
        let factor = SecondFactorRecord(userID: caller.userID, sealedSecret: try sealing.seal(secret, userID: caller.userID), now: now)
        do {
            try store.table.putItem(factor.pendingItem(now: now), condition: "attribute_not_exists(PK) OR #status = :pending",
                                    attributes: ExpressionAttributes(names: ["#status": "status"],
                                                                     values: [":pending": .s(SecondFactorRecord.Status.pending.rawValue)]))
        } catch .conditionFailed {
            throw MFAFlow.alreadyEnrolled  // confirmed meanwhile, by another request
        } catch {
            throw error.authError
        }
        logger.info("second factor enrolment started", metadata: ["userId": .string(caller.userID)])
        let encoded = Base32.encode(secret)
        let account = caller.user.profile.email ?? caller.userID
        return Enrolment(secret: encoded, uri: KeyURI.totp(issuer: settings.issuer, account: account, secret: encoded))
    }

    /// The pending factor becomes active with ten new recovery codes (returned, shown this
    /// once), and the caller's session aal2.
    func confirm(code: String, for caller: Caller, logger: Logger) throws(AuthError) -> [String] {
        try TOTP.validate(code)
        let now = clock.nowSeconds
        guard let factor = caller.user.secondFactor.factor else { throw MFAFlow.notEnrolled }
        if factor.isActive { throw MFAFlow.alreadyEnrolled }
        try checkWrongCodeBudget(caller.user, now: now)
        guard let step = TOTP.matchingStep(code, secret: try sealing.open(factor), now: now) else {
            throw try wrongCode(userID: caller.userID, challenge: nil, now: now, logger: logger)
        }
        let codes = RecoveryCodes.generate(random)
        let secret = try sealing.open(factor)
        let hashes = codes.map { RecoveryCodes.hash($0, secret: secret) }
        let activation = TransactWriteAction.update(
            key: Keys.secondFactor(caller.userID),
            update: "SET #status = :active, lastUsedStep = :step, recoveryCodes = :codes, confirmedAt = :now REMOVE #ttl",
            condition: "#status = :pending AND sealedSecret = :sealed",
            attributes: ExpressionAttributes(names: ["#status": "status", "#ttl": "ttl"], values: [
                ":active": .s(SecondFactorRecord.Status.active.rawValue), ":pending": .s(SecondFactorRecord.Status.pending.rawValue),
                ":step": .n(step), ":codes": SecondFactorRecord.recoveryCodesValue(hashes), ":now": .s(Timestamps.format(now)),
                ":sealed": .s(factor.sealedSecret),
            ]))
        switch try raiseSession(of: caller, with: activation) {
        case .raised: break
        case .factorRefused: throw AuthError(.mfaNotEnrolled, "the enrolment was replaced or confirmed meanwhile; enrol again")
        }
        logger.info("second factor enrolled", metadata: ["userId": .string(caller.userID)])
        return codes
    }

    // MARK: - Completing a sign-in

    struct ChallengeRequest {
        var mfaToken: String
        var proof: SecondFactorProof
        /// The sign-in's device: the mfaToken is bound to it.
        var device: [String: String]
        var provider: String?
        var hookRequest = HookRequest()
    }

    /// The sign-in the mfaToken waits for, opened now with the session aal2: the challenge's
    /// deletion and the factor's use ride in the session's transaction, so of two challenges
    /// racing with one code exactly one opens a session.
    func challenge(_ request: ChallengeRequest, logger: Logger) throws(AuthError) -> (SignInResult, Assurance) {
        let invalid = AuthError(.mfaTokenInvalid, "the mfaToken is unknown, used or expired; sign in again")
        guard let parsed = MFAToken.parse(request.mfaToken) else { throw invalid }
        let (userID, hash) = parsed
        let now = clock.nowSeconds
        guard let user = try store.user(userID) else { throw invalid }
        guard let challenge = user.secondFactor.challenges.first(where: { $0.hash == hash }), challenge.isLive(now: now) else {
            throw invalid.about(userID: userID, sessionID: nil)
        }
        // Bound to the sign-in's device and provider: a token carried elsewhere opens nothing.
        guard (challenge.device["id"] ?? "") == (request.device["id"] ?? ""),
              request.provider.map({ $0 == challenge.identity.provider.rawValue }) ?? true else {
            throw invalid.about(userID: userID, sessionID: nil)
        }
        guard let factor = user.secondFactor.factor, factor.isActive else { throw invalid.about(userID: userID, sessionID: nil) }
        try checkWrongCodeBudget(user, now: now)
        guard let use = try verify(request.proof, factor: factor, now: now) else {
            throw try wrongCode(userID: userID, challenge: challenge, now: now, logger: logger)
        }
        let consumeChallenge = TransactWriteAction.delete(
            key: Keys.mfaChallenge(userID, hash: hash), condition: "attempts < :maximum AND expiresAt > :now",
            attributes: ExpressionAttributes(values: [":maximum": .n(MFAChallengeRecord.maximumAttempts), ":now": .n(now)]))
        var proof = ProvenIdentity(identity: challenge.identity, isOneTimeProof: false, profileName: challenge.profileName)
        proof.passedSecondFactor = true
        proof.userVerified = challenge.firstFactor.methods.contains("user")
        let assurance = challenge.firstFactor.raised()
        var hooks = SignInHooks(hooks: signIn.hooks, request: request.hookRequest, provider: challenge.identity.provider.rawValue,
                                identity: challenge.identity, device: challenge.device)
        hooks.admittedEarlier(userID)
        var minted = MintedSessions(tokens: tokens, random: random, hooks: hooks, logger: logger, assurance: assurance)
        let joining = challenge.joining
            ? LinkedIdentity(provider: challenge.identity.provider, subject: challenge.identity.subject, email: challenge.identity.email,
                             linkedAt: now)
            : nil
        switch try signIn.openSession(userID: userID, minted: &minted, proof: proof, device: challenge.device, joining: joining,
                                      ceremony: [consumeChallenge, use.write(userID: userID)], logger: logger) {
        case .opened(let result):
            logger.info("signed in with a second factor", metadata: ["userId": .string(userID), "sessionId": .string(result.session.sessionID),
                                                                  "factor": .string(request.proof.kind)])
            return (result, assurance)
        case .ceremonyRefused(let reasons):
            // The challenge went first (used by a racing request), or the step or code did.
            let challengeGone = reasons.first?.code == "ConditionalCheckFailed"
            throw (challengeGone ? invalid : MFAFlow.codeInvalid).about(userID: userID, sessionID: nil)
        case .userDeleted, .userUnavailable, .identityTaken:
            throw invalid.about(userID: userID, sessionID: nil)
        }
    }

    // MARK: - Step-up

    struct StepUp {
        var sessionID: String
        var accessToken: String
        var lifetime: Int64
        var assurance: Assurance
    }

    /// The caller's session raised to aal2, and a new access token saying so; its refresh
    /// token is the one the client holds (its refreshes now carry aal2 too).
    func stepUp(_ presented: SecondFactorProof, for caller: Caller, hookRequest: HookRequest = HookRequest(),
                logger: Logger) throws(AuthError) -> StepUp {
        let now = clock.nowSeconds
        guard let factor = caller.user.secondFactor.factor, factor.isActive else { throw MFAFlow.notEnrolled }
        try checkWrongCodeBudget(caller.user, now: now)
        guard let use = try verify(presented, factor: factor, now: now) else {
            throw try wrongCode(userID: caller.userID, challenge: nil, now: now, logger: logger)
        }
        // The new token's claims before the session is raised: a refusal leaves it as it was.
        var claimsHook = AccessTokenClaimsCall(hooks: signIn.hooks, request: hookRequest, payload: HookPayload(
            type: .accessTokenClaims, provider: nil, identity: nil, user: nil, sessionID: caller.sessionID))
        try claimsHook.askBeforeWrite(user: caller.user.json, logger: logger)
        let assurance: Assurance
        switch try raiseSession(of: caller, with: use.write(userID: caller.userID)) {
        case .raised(let raised): assurance = raised
        case .factorRefused: throw MFAFlow.codeInvalid
        }
        let minted = try tokens.issueAccessToken(userID: caller.userID, sessionID: caller.sessionID, anonymous: caller.user.profile.isGuest,
                                                 appMetadata: caller.user.profile.appMetadata, assurance: assurance,
                                                 claimsHook: claimsHook, logger: logger)
        logger.info("session stepped up", metadata: ["userId": .string(caller.userID), "sessionId": .string(caller.sessionID),
                                                     "factor": .string(presented.kind)])
        return StepUp(sessionID: caller.sessionID, accessToken: minted.accessToken, lifetime: minted.lifetime, assurance: assurance)
    }

    // MARK: - The factor

    func status(for caller: Caller) -> (totp: Bool, recoveryCodesLeft: Int) {
        guard let factor = caller.user.secondFactor.factor, factor.isActive else { return (false, 0) }
        return (true, factor.recoveryCodeHashes.count)
    }

    /// Ten new codes; the old ones stop working.
    func newRecoveryCodes(for caller: Caller, logger: Logger) throws(AuthError) -> [String] {
        let factor = try activeFactorAtAAL2(caller)
        let codes = RecoveryCodes.generate(random)
        let secret = try sealing.open(factor)
        do {
            try store.table.updateItem(
                Keys.secondFactor(caller.userID), update: "SET recoveryCodes = :codes",
                condition: "#status = :active AND sealedSecret = :sealed",
                attributes: ExpressionAttributes(names: ["#status": "status"], values: [
                    ":codes": SecondFactorRecord.recoveryCodesValue(codes.map { RecoveryCodes.hash($0, secret: secret) }),
                    ":active": .s(SecondFactorRecord.Status.active.rawValue), ":sealed": .s(factor.sealedSecret),
                ]),
                returnValues: .none)
        } catch .conditionFailed {
            throw MFAFlow.notEnrolled
        } catch {
            throw error.authError
        }
        logger.info("recovery codes replaced", metadata: ["userId": .string(caller.userID)])
        return codes
    }

    /// The factor and its recovery codes.
    func remove(for caller: Caller, logger: Logger) throws(AuthError) {
        let factor = try activeFactorAtAAL2(caller)
        do {
            try store.table.deleteItem(Keys.secondFactor(caller.userID), condition: "#status = :active AND sealedSecret = :sealed",
                                       attributes: ExpressionAttributes(names: ["#status": "status"], values: [
                                           ":active": .s(SecondFactorRecord.Status.active.rawValue), ":sealed": .s(factor.sealedSecret),
                                       ]))
        } catch .conditionFailed {
            throw MFAFlow.notEnrolled
        } catch {
            throw error.authError
        }
        logger.info("second factor removed", metadata: ["userId": .string(caller.userID)])
    }

    func activeFactorAtAAL2(_ caller: Caller) throws(AuthError) -> SecondFactorRecord {
        guard let factor = caller.user.secondFactor.factor, factor.isActive else { throw MFAFlow.notEnrolled }
        try caller.requireAAL2()
        return factor
    }

    // MARK: - Codes

    /// What a right code uses up; nil for a wrong one (or a step already used).
    func verify(_ presented: SecondFactorProof, factor: SecondFactorRecord, now: Int64) throws(AuthError) -> SecondFactorUse? {
        let secret = try sealing.open(factor)
        switch presented {
        case .code(let code):
            guard let step = TOTP.matchingStep(code, secret: secret, now: now), step > factor.lastUsedStep else { return nil }
            return .step(step)
        case .recoveryCode(let normalized):
            let hash = RecoveryCodes.hash(normalized, secret: secret)
            return factor.recoveryCodeHashes.contains(hash) ? .recoveryCode(hash: hash) : nil
        }
    }

    /// RATE_LIMITED once the user's wrong codes of the last hour reached the limit, before any
    /// code is tried: the counter came with the user's Query.
    func checkWrongCodeBudget(_ user: UserView, now: Int64) throws(AuthError) {
        do {
            try TableRateLimiter.check(.secondFactorWrongCodesPerUser, counter: user.secondFactor.wrongCodeCounter,
                                       limit: MFAFlow.wrongCodeLimit, now: now)
        } catch {
            throw error.about(userID: user.profile.userID, sessionID: nil)
        }
    }

    /// Counts a wrong code against the challenge (5 end it) and the user (10 an hour), and says so.
    func wrongCode(userID: String, challenge: MFAChallengeRecord?, now: Int64, logger: Logger) throws(AuthError) -> AuthError {
        if let challenge {
            do {
                try store.table.updateItem(Keys.mfaChallenge(userID, hash: challenge.hash), update: "SET attempts = attempts + :one",
                                           condition: "attempts < :maximum AND expiresAt > :now",
                                           attributes: ExpressionAttributes(values: [
                                               ":one": .n(1), ":maximum": .n(MFAChallengeRecord.maximumAttempts), ":now": .n(now),
                                           ]),
                                           returnValues: .none)
            } catch .conditionFailed {
                // Spent or used meanwhile: the user's count below still holds the guess.
            } catch {
                throw error.authError
            }
        }
        try limiter.consume(.secondFactorWrongCodesPerUser, at: Keys.mfaWrongCodes(userID), limit: MFAFlow.wrongCodeLimit, now: now)
        logger.warning("wrong second-factor code", metadata: ["userId": .string(userID)])
        return MFAFlow.codeInvalid.about(userID: userID, sessionID: nil)
    }

    // MARK: - The session's assurance

    enum Raise {
        case raised(Assurance)
        /// The factor's write was refused: the step or code was used meanwhile, or the factor changed.
        case factorRefused
    }

    private enum RaiseStep: Equatable { case factor, session }

    /// Records aal2 on the caller's session and on its live refresh token (a refresh reads only
    /// its token, and keeps what that says), with the factor's write in the same transaction.
    func raiseSession(of caller: Caller, with factorWrite: TransactWriteAction) throws(AuthError) -> Raise {
        try retry.run("session step-up") { () throws(AuthError) -> Raise? in
            guard let session = try store.session(userID: caller.userID, sessionID: caller.sessionID), session.status == .active else {
                throw AuthError(.accessTokenRevoked, "the access token's session was signed out")
            }
            let assurance = (session.assurance == .unknown ? Assurance(claims: caller.claims) : session.assurance).raised()
            var plan = TransactionPlan<RaiseStep>()
            plan.add(.factor, factorWrite)
            var values = assurance.updateValues
            values[":active"] = .s(SessionStatus.active.rawValue)
            var condition = "#status = :active"
            if let generation = session.liveGeneration {
                values[":generation"] = .n(generation)
                condition += " AND liveGeneration = :generation"
            }
            plan.add(.session, .update(key: Keys.session(caller.userID, caller.sessionID), update: "SET aal = :aal, amr = :amr",
                                       condition: condition, attributes: ExpressionAttributes(names: ["#status": "status"], values: values)))
            if let generation = session.liveGeneration {
                plan.add(.session, .update(key: Keys.refreshToken(caller.userID, Keys.familyTokenID(caller.sessionID, generation: generation)),
                                           update: "SET aal = :aal, amr = :amr", condition: "#status = :active",
                                           attributes: ExpressionAttributes(names: ["#status": "status"], values: [
                                               ":aal": values[":aal"]!, ":amr": values[":amr"]!, ":active": .s(RefreshTokenStatus.active.rawValue),
                                           ])))
            }
            guard let cancellation = try store.table.run(plan) else { return .raised(assurance) }
            if cancellation.failed(.factor) { return .factorRefused }
            return nil  // a refresh rotated the token, or the session ended: read it again
        }
    }

    static let alreadyEnrolled = AuthError(.mfaAlreadyEnrolled, "a second factor is already active; remove it first")
    static let notEnrolled = AuthError(.mfaNotEnrolled, "no active second factor")
    static let codeInvalid = AuthError(.mfaCodeInvalid, "the code is wrong or was already used")
}

extension Caller {
    /// AAL2_REQUIRED for a user with an active factor whose access token is aal1 (contract
    /// section 21: deleting the account, new recovery codes, removing the factor, registering
    /// or deleting a passkey).
    func requireAAL2() throws(AuthError) {
        guard user.secondFactor.hasActiveFactor, Assurance(claims: claims).level != .aal2 else { return }
        throw AuthError(.aal2Required, "this action needs a session with a second factor: step up with mfa step-up first")
            .about(userID: userID, sessionID: sessionID)
    }
}

/// The Key Uri Format (github.com/google/google-authenticator/wiki/Key-Uri-Format) of a TOTP
/// secret, which authenticator apps read from a QR code.
enum KeyURI {
    static func totp(issuer: String, account: String, secret: String) -> String {
        "otpauth://totp/\(escaped(issuer)):\(escaped(account))?secret=\(secret)&issuer=\(escaped(issuer))"
            + "&algorithm=SHA1&digits=\(TOTP.digits)&period=\(TOTP.period)"
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters.
    static func escaped(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in text.utf8 {
            if byte.isASCIIAlphanumeric(or: "-._~") {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
