/// `signin`: verify the ID token, find or create the user, open a session, issue tokens.
public struct SignInFlow: Sendable {
    let services: AuthServices

    public init(services: AuthServices) { self.services = services }

    struct Request {
        var provider: ProviderName
        var idToken: String
        var nonce: String?
        var device: [String: String]
        var profileName: String?
    }

    static func parse(_ body: RequestBody) throws(AuthError) -> Request {
        let providerName = try body.requiredString("provider", maximumBytes: 64)
        let idToken = try body.requiredString("idToken", maximumBytes: 16 << 10)
        let provider = try ProviderName.parse(providerName)
        let nonce = try body.optionalString("nonce", maximumBytes: 1024, emptyIsAbsent: true)
        var device: [String: String] = [:]
        if let deviceBody = try body.optionalObject("device") {
            for field in ["id", "name", "platform"] {
                if let value = try deviceBody.optionalString(field, maximumBytes: 256, emptyIsAbsent: true) {
                    device[field] = value
                }
            }
        }
        let profileName = try body.optionalObject("profile")?.optionalString("name", maximumBytes: 256, emptyIsAbsent: true)
        return Request(provider: provider, idToken: idToken, nonce: nonce, device: device, profileName: profileName)
    }

    public func handle(_ body: RequestBody, logger: Logger) throws(AuthError) -> InvocationResponse {
        let request = try SignInFlow.parse(body)
        let identity = try services.verifier.verify(request.idToken, provider: request.provider, nonce: request.nonce)
        let (userID, isNewUser) = try findOrCreateUser(identity, profileName: request.profileName, logger: logger)
        let opened = try SessionOpener(services: services).open(
            userID: userID, identity: identity, profileName: request.profileName, device: request.device,
            refreshProfile: !isNewUser, logger: logger)
        logger.info("signed in", ["userId": .string(userID), "sessionId": .string(opened.session.sessionID),
                                  "provider": .string(identity.provider.rawValue), "newUser": .bool(isNewUser)])
        let issued = opened.tokens.json(configuration: services.configuration)
        return InvocationResponse(body: [
            "user": opened.user.json, "isNewUser": .bool(isNewUser), "session": opened.session.json,
            "tokens": issued.tokens, "credentials": issued.credentials,
        ])
    }

    /// The identity's user: linked already, joined by verified email, or created. Creation is one
    /// transaction conditional on the link not existing, so concurrent first sign-ins of one identity
    /// create exactly one user; the losers re-read the link and sign in to the winner's user.
    func findOrCreateUser(_ identity: VerifiedIdentity, profileName: String?, logger: Logger) throws(AuthError) -> (String, Bool) {
        let table = services.table
        let linkKey = Keys.identityLink(identity.provider, identity.subject)
        let verifiedEmail = identity.emailVerified ? identity.email : nil
        var claimEmail = verifiedEmail != nil
        for _ in 0..<5 {
            if let userID = try table.read(linkKey)?["userId"]?.stringValue { return (userID, false) }
            let now = services.clock.nowSeconds
            let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: now)

            if let email = verifiedEmail, services.configuration.emailLinking == .verified,
               let ownerID = try table.read(Keys.email(email))?["userId"]?.stringValue {
                let reasons = try table.transact([
                    .put(linked.linkItem(userID: ownerID), condition: "attribute_not_exists(PK)"),
                    .put(linked.userSideItem(userID: ownerID), condition: "attribute_not_exists(PK)"),
                    .update(key: Keys.profileKey(ownerID), update: "SET identityCount = identityCount + :one",
                            condition: "attribute_exists(PK)", attributes: ExpressionAttributes(values: [":one": .n(1)])),
                ])
                guard let reasons else {
                    logger.info("linked a new identity to an existing user by verified email",
                                ["userId": .string(ownerID), "provider": .string(identity.provider.rawValue)])
                    return (ownerID, false)
                }
                if reasons.failed(0) { continue }  // the identity got linked meanwhile: re-read
                // The email's owner already has another identity of this provider (or vanished):
                // this identity becomes a user of its own, without the email claim.
                claimEmail = false
            } else if verifiedEmail != nil, services.configuration.emailLinking == .never,
                      try table.read(Keys.email(verifiedEmail!)) != nil {
                claimEmail = false
            }

            let userID = newIdentifier(services.random)
            var profile = UserProfile(userID: userID, email: identity.email, emailVerified: identity.emailVerified,
                                      displayName: identity.name ?? profileName, pictureURL: identity.picture, now: now)
            profile.identityCount = 1
            var actions: [TransactWriteAction] = [
                .put(profile.item, condition: "attribute_not_exists(PK)"),
                .put(linked.linkItem(userID: userID), condition: "attribute_not_exists(PK)"),
                .put(linked.userSideItem(userID: userID), condition: "attribute_not_exists(PK)"),
            ]
            if claimEmail, let email = verifiedEmail {
                var emailItem = Keys.email(email).item
                emailItem["userId"] = .s(userID)
                actions.append(.put(emailItem, condition: "attribute_not_exists(PK)"))
            }
            guard let reasons = try table.transact(actions) else {
                logger.info("created a user", ["userId": .string(userID), "provider": .string(identity.provider.rawValue)])
                return (userID, true)
            }
            if reasons.failed(1) { continue }  // lost the race for this identity: sign in to the winner
            if reasons.failed(3) {
                // Someone claimed the email meanwhile: join them (verified linking) or skip the claim.
                if services.configuration.emailLinking == .never { claimEmail = false }
                continue
            }
            throw AuthError(.internal, "internal error", detail: "user creation cancelled: \(reasons.map(\.code))")
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "findOrCreateUser gave up")
    }
}

/// Opens a session for a user (enforcing AUTH_MAX_SESSIONS) together with its first refresh token,
/// and refreshes the profile, in one transaction guarded by the profile's version.
struct SessionOpener {
    let services: AuthServices

    struct Opened {
        var user: UserView
        var session: SessionRecord
        var tokens: IssuedTokens
    }

    func open(userID: String, identity: VerifiedIdentity, profileName: String?, device: [String: String],
              refreshProfile: Bool, logger: Logger) throws(AuthError) -> Opened {
        let configuration = services.configuration
        let sessionID = newIdentifier(services.random)
        let refresh = NewRefreshToken(random: services.random)
        let tokens = try services.prepareTokens(userID: userID, sessionID: sessionID, refresh: refresh, logger: logger)
        for attempt in 0...AuthServices.contentionBackoff.maximumRetries {
            if attempt > 0 { services.waitAfterLosingRace(attempt - 1) }
            let now = services.clock.nowSeconds
            guard var user = try services.loadUser(userID) else {
                throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "user \(userID) has a link but no profile")
            }
            let expectedVersion = user.profile.version
            if refreshProfile { user.profile.refresh(from: identity, profileName: profileName) }
            user.profile.lastSignInAt = now
            user.profile.updatedAt = now
            // Least recently active first; a full house evicts until the new session fits.
            let evicted = user.profile.activeSessions.sorted { ($0.value, $0.key) < ($1.value, $1.key) }
                .prefix(max(0, user.profile.activeSessions.count - configuration.maxSessions + 1)).prefix(90).map(\.key)
            for sessionID in evicted { user.profile.activeSessions[sessionID] = nil }
            user.profile.activeSessions[sessionID] = now
            user.profile.version = expectedVersion + 1

            let session = SessionRecord(userID: userID, sessionID: sessionID, device: device, now: now)
            var actions: [TransactWriteAction] = [
                .put(user.profile.item, condition: "#version = :expected",
                     attributes: ExpressionAttributes(names: ["#version": "version"], values: [":expected": .n(expectedVersion)])),
                .put(session.item(refreshTokenTTL: configuration.refreshTokenTTL), condition: "attribute_not_exists(PK)"),
                .put(services.refreshRecord(for: refresh, userID: userID, sessionID: sessionID, sessionCreatedAt: now)),
            ]
            for evictedID in evicted {
                actions.append(.update(key: Keys.session(userID, evictedID), update: "SET #status = :revoked, #ttl = :ttl",
                                       attributes: ExpressionAttributes(names: ["#status": "status", "#ttl": "ttl"],
                                                                        values: [":revoked": .s("REVOKED"), ":ttl": .n(now + RefreshTokenRecord.revokedVisibility)])))
            }
            guard let reasons = try services.table.transact(actions) else {
                for evictedID in evicted {
                    logger.info("session evicted by the session limit", ["userId": .string(userID), "sessionId": .string(evictedID)])
                    // The session is already revoked, which stops its tokens; marking them too keeps
                    // the store telling the truth. A failure here changes nothing for the caller.
                    do {
                        try SessionRevocation(services: services).revoke(userID: userID, sessionID: evictedID)
                    } catch {
                        logger.warning("could not mark an evicted session's tokens revoked",
                                       ["sessionId": .string(evictedID), "code": .string(error.code.rawValue)])
                    }
                }
                return Opened(user: user, session: session, tokens: tokens)
            }
            if reasons.failed(0) { continue }  // a concurrent sign-in or refresh changed the profile
            throw AuthError(.internal, "internal error", detail: "session opening cancelled: \(reasons.map(\.code))")
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "session opening gave up")
    }
}

extension UserProfile {
    /// Takes the provider's latest data; an absent value never erases a stored one. Apple's
    /// one-time `profile.name` only fills an empty display name.
    mutating func refresh(from identity: VerifiedIdentity, profileName: String?) {
        if let email = identity.email {
            emailVerified = email == self.email ? (emailVerified || identity.emailVerified) : identity.emailVerified
            self.email = email
        }
        if let name = identity.name { displayName = name }
        if displayName == nil, let profileName { displayName = profileName }
        if let picture = identity.picture { pictureURL = picture }
    }
}
