import Logging

/// `passkey` (contract section 15) and the passkey proof of `signin` and `delete-account`.
///
/// A passkey sign-in costs three requests on DynamoDB: a GetItem of the credential's link (which
/// holds its key and count), the Query of the user, and the one transaction that consumes the
/// challenge, moves the count and opens the session. The challenge is never read first: the
/// transaction's condition is the check, so a refused ceremony and a lost race write nothing.
struct PasskeyFlow: Sendable {
    let settings: PasskeySettings?
    let passkeys: PasskeyStore
    let store: AccountStore
    let callerCheck: CallerCheck
    let signIn: SignInFlow
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

    static let algorithms: [JSONValue] = COSEAlgorithm.allCases.map { ["type": "public-key", "alg": .number($0.rawValue)] }

    func newChallenge(purpose: PasskeyStore.Purpose, userID: String?, handle: [UInt8]? = nil) throws(AuthError) -> [UInt8] {
        let challenge = random.bytes(32)
        try passkeys.putChallenge(challenge, purpose: purpose, userID: userID, handle: handle, now: clock.nowSeconds)
        return challenge
    }

    /// PublicKeyCredentialCreationOptionsJSON (WebAuthn Level 3 §5.4).
    func registrationOptions(for caller: Caller) throws(AuthError) -> JSONValue {
        let settings = try verifier().settings
        let handle = try passkeys.userHandle(of: caller.userID, random: random, expiresAt: caller.user.profile.guestExpiresAt)
        let existing = try passkeys.passkeys(of: caller.userID)
        let challenge = try newChallenge(purpose: .register, userID: caller.userID, handle: handle)
        let profile = caller.user.profile
        // user.name and displayName are what the authenticator shows; the handle is what it keeps.
        let label = profile.email ?? profile.displayName ?? "account"
        let excluded: [JSONValue] = existing.map { passkey in
            var descriptor: [String: JSONValue] = ["type": "public-key", "id": .string(Base64.urlEncoded(passkey.credentialID))]
            if !passkey.transports.isEmpty { descriptor["transports"] = .array(passkey.transports.map(JSONValue.string)) }
            return .object(descriptor)
        }
        return ["publicKey": [
            "rp": ["id": .string(settings.relyingPartyID), "name": .string(settings.relyingPartyName)],
            "user": ["id": .string(Base64.urlEncoded(handle)), "name": .string(label), "displayName": .string(profile.displayName ?? label)],
            "challenge": .string(Base64.urlEncoded(challenge)),
            "pubKeyCredParams": .array(Self.algorithms),
            "timeout": .number(PasskeyStore.challengeLifetime * 1000),
            "excludeCredentials": .array(excluded),
            "authenticatorSelection": ["residentKey": "required", "requireResidentKey": true,
                                       "userVerification": .string(settings.userVerificationRequired ? "required" : "preferred")],
            "attestation": "none",
        ]]
    }

    /// PublicKeyCredentialRequestOptionsJSON for a discoverable credential. No caller: each
    /// writes a challenge item for anyone who asks, so HTTP requests are limited per source IP.
    func loginOptions(origin: RequestOrigin, logger: Logger) throws(AuthError) -> JSONValue {
        let settings = try verifier().settings
        if let sourceKey = try origin.rateLimitKey() {
            do {
                try limiter.consume(.passkeyOptionsPerIP, key: sourceKey, limit: RateLimit(settings.loginOptionsPerSourceIP), now: clock.nowSeconds)
            } catch where error.code == .rateLimited {
                logger.warning("passkey login-options refused: rate limit", metadata: ["sourceIp": .string(sourceKey)])
                throw error
            }
        }
        let challenge = try newChallenge(purpose: .authenticate, userID: nil)
        return ["publicKey": [
            "challenge": .string(Base64.urlEncoded(challenge)), "timeout": .number(PasskeyStore.challengeLifetime * 1000),
            "rpId": .string(settings.relyingPartyID), "allowCredentials": [],
            "userVerification": .string(settings.userVerificationRequired ? "required" : "preferred"),
        ]]
    }

    func register(_ body: RequestBody, for caller: Caller, logger: Logger) throws(AuthError) -> JSONValue {
        let verifier = try verifier()
        guard let credential = try body.optionalObject("credential") else { throw AuthError(.invalidRequest, "credential is required") }
        let name = try body.optionalString("name", maximumBytes: 64, emptyIsAbsent: true) ?? "Passkey"
        let response = try RegistrationResponse(credential)
        let challenge = response.clientData.challenge
        let registration = try verifier.verifyRegistration(response, challenge: challenge)
        // The handle the options gave the authenticator: the challenge was issued with it, and its
        // consumption is conditional on it (a guest's handle could have expired meanwhile). No
        // handle: no options were asked for, so no challenge of this user can be valid.
        guard let handle = try passkeys.existingUserHandle(of: caller.userID) else { throw PasskeyStore.challengeExpired }
        return try callerCheck.retrying("passkey registration", for: caller, with: retry) { (user: UserView) throws(AuthError) -> JSONValue? in
            guard user.identities.filter({ $0.provider == .passkey }).count < PasskeyStore.maximumPasskeysPerUser else {
                throw AuthError(.passkeyLimitReached, "a user has at most \(PasskeyStore.maximumPasskeysPerUser) passkeys; delete one first")
            }
            let now = clock.nowSeconds
            let identity = LinkedIdentity(provider: .passkey, subject: PasskeyStore.passkeyID(credentialID: registration.credentialID),
                                          email: nil, linkedAt: now)
            let profile: TransactWriteAction
            if user.profile.isGuest {
                // A guest's first identity makes it a full user, as link-provider's does.
                var upgraded = user.profile
                upgraded.isGuest = false
                upgraded.guestExpiresAt = nil
                upgraded.identityCount = 1
                upgraded.updatedAt = now
                upgraded.version += 1
                profile = .put(upgraded.item, condition: "attribute_exists(activeSessions.#sid) AND #version = :read",
                               attributes: ExpressionAttributes(names: ["#sid": caller.sessionID, "#version": "version"],
                                                                values: [":read": .n(user.profile.version)]))
            } else {
                profile = store.identityCountChange(user, by: 1, callerSessionID: caller.sessionID, now: now)
            }
            let outcome = try passkeys.register(registration, identity: identity, challenge: challenge, name: name, handle: handle,
                                                userID: caller.userID, profile: profile, upgradingGuest: user.profile.isGuest, now: now)
            switch outcome {
            case .registered:
                if user.profile.isGuest {
                    logger.info("guest upgraded to a full user", metadata: ["userId": .string(caller.userID), "provider": "passkey"])
                    store.dropGuestExpiry(of: caller.userID, now: now)
                }
                logger.info("registered a passkey", metadata: ["userId": .string(caller.userID), "passkeyId": .string(identity.subject)])
                return ["passkey": ["id": .string(identity.subject), "name": .string(name), "createdAt": .string(Timestamps.format(now)),
                                    "lastUsedAt": nil]]
            case .challengeExpired: throw PasskeyStore.challengeExpired
            case .alreadyRegistered: throw AuthError(.passkeyAlreadyRegistered, "this passkey is already registered")
            case .userChanged: return nil
            }
        }
    }

    func list(for caller: Caller) throws(AuthError) -> JSONValue {
        _ = try verifier()
        return ["passkeys": .array(try passkeys.passkeys(of: caller.userID).map(\.json))]
    }

    /// Deleting a passkey revokes nothing else; the last identity stays (LAST_IDENTITY).
    func delete(_ passkeyID: String, for caller: Caller, logger: Logger) throws(AuthError) -> JSONValue {
        _ = try verifier()
        return try callerCheck.retrying("passkey deletion", for: caller, with: retry) { (user: UserView) throws(AuthError) -> JSONValue? in
            guard let identity = user.identities.first(where: { $0.provider == .passkey && $0.subject.sameBytes(as: passkeyID) }) else {
                throw AuthError(.passkeyNotFound, "no such passkey")
            }
            guard user.identities.count > 1 else {
                throw AuthError(.lastIdentity, "this passkey is the user's last identity; link another before removing it")
            }
            switch try store.unlink(identity, from: user, callerSessionID: caller.sessionID, now: clock.nowSeconds) {
            case .committed:
                logger.info("deleted a passkey", metadata: ["userId": .string(caller.userID), "passkeyId": .string(passkeyID)])
                return ["deleted": true]
            case .lostRace: return nil
            }
        }
    }

    /// The assertion checked against its stored credential; an unknown credential fails with
    /// the same message as a bad signature, after the same checks, so neither tells it exists.
    func verifiedAssertion(_ body: RequestBody) throws(AuthError) -> (PasskeyStore.Credential, AuthenticationResponse, VerifiedAssertion) {
        let verifier = try verifier()
        guard let credential = try body.optionalObject("credential") else { throw AuthError(.invalidRequest, "credential is required") }
        let response = try AuthenticationResponse(credential)
        let stored = try passkeys.credential(passkeyID: PasskeyStore.passkeyID(credentialID: response.credentialID))
        let assertion = try verifier.verifyAssertion(response, challenge: response.clientData.challenge, credential: stored?.stored)
        guard let stored else { throw WebAuthnVerifier.unknownOrBadSignature }
        return (stored, response, assertion)
    }

    func identity(_ credential: PasskeyStore.Credential) -> VerifiedIdentity {
        VerifiedIdentity(provider: .passkey, subject: credential.passkeyID, email: nil, emailVerified: false, isPrivateEmail: false,
                         name: nil, picture: nil, claims: [:])
    }

    func signIn(_ body: RequestBody, logger: Logger) throws(AuthError) -> SignInResult {
        let (credential, response, assertion) = try verifiedAssertion(body)
        let identity = identity(credential)
        let request = SignInRequest(provider: .passkey, idToken: "", nonce: nil, device: try SignInRequest.device(body), profileName: nil)
        var minted = MintedSessions(tokens: signIn.tokens, random: random, logger: logger)
        let ceremony = PasskeyStore.assertionWrites(challenge: response.clientData.challenge, credential: credential, assertion: assertion,
                                                    now: clock.nowSeconds)
        switch try signIn.openSession(userID: credential.userID, minted: &minted, identity: identity, request: request, joining: nil,
                                      ceremony: ceremony.actions, logger: logger) {
        case .opened(let result):
            logger.info("signed in", metadata: ["userId": .string(credential.userID), "sessionId": .string(result.session.sessionID),
                                                "provider": .string(ProviderName.passkey.rawValue), "newUser": .bool(false)])
            return result
        case .ceremonyRefused(let reasons): throw PasskeyStore.assertionRefusal(ceremony.cancellation(reasons))
        case .userDeleted, .userUnavailable, .identityTaken: throw WebAuthnVerifier.unknownOrBadSignature
        }
    }

    /// A re-authentication (delete-account) or a link: the ceremony's writes commit on their own.
    func prove(_ body: RequestBody, logger: Logger) throws(AuthError) -> ProvenIdentity {
        let (credential, response, assertion) = try verifiedAssertion(body)
        let writes = PasskeyStore.assertionWrites(challenge: response.clientData.challenge, credential: credential, assertion: assertion,
                                                  now: clock.nowSeconds)
        if let cancellation = try passkeys.table.run(writes) { throw PasskeyStore.assertionRefusal(cancellation) }
        return ProvenIdentity(identity: identity(credential), isOneTimeProof: true)
    }
}

/// Provider `passkey` in the registry: `signin` and `delete-account`'s re-authentication.
struct PasskeySignIn: SignInProvider {
    let flow: PasskeyFlow

    var name: String { ProviderName.passkey.rawValue }

    func prove(_ body: RequestBody, logger: Logger) throws(AuthError) -> ProvenIdentity? { try flow.prove(body, logger: logger) }

    func signIn(_ body: RequestBody, request: InvocationRequest, logger: Logger) throws(AuthError) -> SignInResult {
        try flow.signIn(body, logger: logger)
    }
}
