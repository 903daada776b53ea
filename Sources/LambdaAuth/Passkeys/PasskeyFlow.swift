import Logging

/// What `register` is asked: the authenticator's answer to the registration options, and the
/// name the user gives the passkey.
struct PasskeyRegistrationRequest {
    var response: RegistrationResponse
    var name: String
}

/// PublicKeyCredentialCreationOptionsJSON's parts (its view in ResponseViews.swift).
struct PasskeyRegistrationOptions {
    var settings: PasskeySettings
    /// What the authenticator keeps: the user's handle.
    var userHandle: [UInt8]
    /// What the authenticator shows (user.name and user.displayName).
    var userName: String
    var userDisplayName: String
    var challenge: [UInt8]
    /// The user's passkeys, which the authenticator must not register again.
    var excluded: [PasskeyStore.Listed]
}

/// PublicKeyCredentialRequestOptionsJSON's parts, for a discoverable credential.
struct PasskeyLoginOptions {
    var settings: PasskeySettings
    var challenge: [UInt8]
}

/// `passkey` (contract section 15) and the passkey proof of `signin`, `link-provider` and
/// `delete-account`.
///
/// A passkey sign-in costs three requests on DynamoDB: a GetItem of the credential's link (which
/// holds its key and count), the Query of the user, and the one transaction that consumes the
/// challenge, moves the count and opens the session. The challenge is never read first: the
/// transaction's condition is the check, so a refused ceremony and a lost race write nothing.
struct PasskeyFlow: SignInProvider {
    let settings: PasskeySettings?
    let passkeys: PasskeyStore
    let store: AccountStore
    let callerCheck: CallerCheck
    let clock: any WallClock
    let random: any RandomSource
    let retry: OptimisticRetry
    let limiter: any RateLimiting

    func verifier() throws(AuthError) -> WebAuthnVerifier {
        guard let settings else { throw AuthError(.providerNotConfigured, "passkeys are off: AUTH_PASSKEY_RP_ID is not set") }
        return WebAuthnVerifier(settings: settings)
    }

    func authenticate(_ accessToken: String, logger: Logger) throws(AuthError) -> Caller {
        try callerCheck.check(accessToken, logger: logger)
    }

    func newChallenge(purpose: PasskeyStore.Purpose, userID: String?, handle: [UInt8]? = nil) throws(AuthError) -> [UInt8] {
        let challenge = random.bytes(32)
        try passkeys.putChallenge(challenge, purpose: purpose, userID: userID, handle: handle, now: clock.nowSeconds)
        return challenge
    }

    func registrationOptions(for caller: Caller) throws(AuthError) -> PasskeyRegistrationOptions {
        let settings = try verifier().settings
        let handle = try passkeys.userHandle(of: caller.userID, random: random, expiresAt: caller.user.profile.guestExpiresAt)
        let existing = try passkeys.passkeys(of: caller.userID)
        let challenge = try newChallenge(purpose: .register, userID: caller.userID, handle: handle)
        let profile = caller.user.profile
        let label = profile.email ?? profile.displayName ?? "account"
        return PasskeyRegistrationOptions(settings: settings, userHandle: handle, userName: label, userDisplayName: profile.displayName ?? label,
                                          challenge: challenge, excluded: existing)
    }

    /// No caller: each writes a challenge item for anyone who asks, so HTTP requests are limited
    /// per source IP.
    func loginOptions(origin: RequestOrigin, logger: Logger) throws(AuthError) -> PasskeyLoginOptions {
        let settings = try verifier().settings
        if let sourceKey = try origin.rateLimitKey() {
            do {
                try limiter.consume(.passkeyOptionsPerIP, key: sourceKey, limit: RateLimit(settings.loginOptionsPerSourceIP), now: clock.nowSeconds)
            } catch where error.code == .rateLimited {
                logger.warning("passkey login-options refused: rate limit", metadata: ["sourceIp": .string(sourceKey)])
                throw error
            }
        }
        return PasskeyLoginOptions(settings: settings, challenge: try newChallenge(purpose: .authenticate, userID: nil))
    }

    /// The new passkey, as `list` shows it.
    func register(_ request: PasskeyRegistrationRequest, for caller: Caller, logger: Logger) throws(AuthError) -> PasskeyStore.Listed {
        try caller.requireAAL2()
        let challenge = request.response.clientData.challenge
        let registration = try verifier().verifyRegistration(request.response, challenge: challenge)
        // The handle the options gave the authenticator: the challenge was issued with it, and its
        // consumption is conditional on it (a guest's handle could have expired meanwhile). No
        // handle: no options were asked for, so no challenge of this user can be valid.
        guard let handle = try passkeys.existingUserHandle(of: caller.userID) else { throw PasskeyStore.challengeExpired }
        let passkeyID = PasskeyStore.passkeyID(credentialID: registration.credentialID)
        return try callerCheck.retrying("passkey registration", for: caller, with: retry) { (user: UserView) throws(AuthError) -> PasskeyStore.Listed? in
            guard user.identities.filter({ $0.provider == .passkey }).count < PasskeyStore.maximumPasskeysPerUser else {
                throw AuthError(.passkeyLimitReached, "a user has at most \(PasskeyStore.maximumPasskeysPerUser) passkeys; delete one first")
            }
            let now = clock.nowSeconds
            let identity = LinkedIdentity(provider: .passkey, subject: passkeyID, email: nil, linkedAt: now)
            let addition = PasskeyStore.addition(registration, identity: identity, challenge: challenge, name: request.name, handle: handle,
                                                 userID: caller.userID, now: now)
            switch try store.addIdentity(addition, to: user, callerSessionID: caller.sessionID, now: now) {
            case .added(_, let upgradedGuest):
                if upgradedGuest {
                    logger.info("guest upgraded to a full user", metadata: ["userId": .string(caller.userID), "provider": "passkey"])
                }
                logger.info("registered a passkey", metadata: ["userId": .string(caller.userID), "passkeyId": .string(passkeyID)])
                return PasskeyStore.Listed(passkeyID: passkeyID, credentialID: registration.credentialID, name: request.name, createdAt: now,
                                           lastUsedAt: nil, transports: registration.transports)
            case .ceremonyRefused: throw PasskeyStore.challengeExpired
            case .identityTaken: throw AuthError(.passkeyAlreadyRegistered, "this passkey is already registered")
            case .userChanged: return nil
            }
        }
    }

    func list(for caller: Caller) throws(AuthError) -> [PasskeyStore.Listed] {
        _ = try verifier()
        return try passkeys.passkeys(of: caller.userID)
    }

    /// Deleting a passkey revokes nothing else; the last identity stays (LAST_IDENTITY).
    func delete(_ passkeyID: String, for caller: Caller, logger: Logger) throws(AuthError) {
        _ = try verifier()
        try caller.requireAAL2()
        try callerCheck.retrying("passkey deletion", for: caller, with: retry) { (user: UserView) throws(AuthError) -> Void? in
            guard let identity = user.identities.first(where: { $0.provider == .passkey && $0.subject.sameBytes(as: passkeyID) }) else {
                throw AuthError(.passkeyNotFound, "no such passkey")
            }
            guard user.identities.count > 1 else {
                throw AuthError(.lastIdentity, "this passkey is the user's last identity; link another before removing it")
            }
            switch try store.unlink(identity, from: user, callerSessionID: caller.sessionID, now: clock.nowSeconds) {
            case .committed:
                logger.info("deleted a passkey", metadata: ["userId": .string(caller.userID), "passkeyId": .string(passkeyID)])
                return ()
            case .lostRace: return nil
            }
        }
    }

    /// Provider `passkey` in the registry.
    var name: String { ProviderName.passkey.rawValue }

    /// The assertion checked against its stored credential; an unknown credential fails with
    /// the same message as a bad signature, after the same checks, so neither tells it exists.
    /// A sign-in commits the ceremony's writes with its session; a link or a re-authentication
    /// commits them here, on their own.
    func prove(_ body: RequestBody, for purpose: ProofPurpose, logger: Logger) throws(AuthError) -> ProvenIdentity? {
        let verifier = try verifier()
        guard let credential = try body.optionalObject("credential") else { throw AuthError(.invalidRequest, "credential is required") }
        let response = try AuthenticationResponse(credential)
        let stored = try passkeys.credential(passkeyID: PasskeyStore.passkeyID(credentialID: response.credentialID))
        let assertion = try verifier.verifyAssertion(response, challenge: response.clientData.challenge, credential: stored?.stored)
        guard let stored else { throw WebAuthnVerifier.unknownOrBadSignature }
        let writes = PasskeyStore.assertionWrites(challenge: response.clientData.challenge, credential: stored, assertion: assertion,
                                                  now: clock.nowSeconds)
        var proof = ProvenIdentity(identity: VerifiedIdentity(provider: .passkey, subject: stored.passkeyID, email: nil, emailVerified: false,
                                                              isPrivateEmail: false, name: nil, picture: nil, claims: [:]),
                                   isOneTimeProof: true)
        proof.userVerified = assertion.userVerified
        switch purpose {
        case .signIn:
            proof.ceremony = ProofCeremony(userID: stored.userID, writes: writes.actions,
                                           refusal: { PasskeyStore.assertionRefusal(writes.cancellation($0)) },
                                           userGone: WebAuthnVerifier.unknownOrBadSignature)
        case .identity:
            if let cancellation = try passkeys.table.run(writes) { throw PasskeyStore.assertionRefusal(cancellation) }
        }
        return proof
    }
}
