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
        let (opened, isNewUser) = try signIn(identity, request: request, logger: logger)
        logger.info("signed in", ["userId": .string(opened.user.profile.userID), "sessionId": .string(opened.session.sessionID),
                                  "provider": .string(identity.provider.rawValue), "newUser": .bool(isNewUser)])
        let issued = opened.tokens.json(configuration: services.configuration)
        return InvocationResponse(body: [
            "user": opened.user.json, "isNewUser": .bool(isNewUser), "session": opened.session.json,
            "tokens": issued.tokens, "credentials": issued.credentials,
        ])
    }

    /// Finds the identity's user (linked already, or joined by verified email) or creates one, and
    /// opens a session, in as few requests as the case allows: a returning user costs a GetItem
    /// of the link, a Query of the user and one transaction; a new user the two GetItems (link,
    /// email claim) and one transaction that creates the user and its first session together.
    /// Creation is conditional on the link not existing, so concurrent first sign-ins of one
    /// identity create exactly one user; the losers re-read the link and sign in to the winner.
    func signIn(_ identity: VerifiedIdentity, request: Request, logger: Logger) throws(AuthError) -> (SessionOpener.Opened, Bool) {
        let table = services.table
        let opener = SessionOpener(services: services)
        let linkKey = Keys.identityLink(identity.provider, identity.subject)
        let verifiedEmail = identity.emailVerified ? identity.email : nil
        var claimEmail = verifiedEmail != nil
        for _ in 0..<5 {
            if let userID = try table.read(linkKey)?["userId"]?.stringValue {
                switch try opener.open(userID: userID, identity: identity, profileName: request.profileName, device: request.device,
                                       joining: nil, logger: logger) {
                case .opened(let opened): return (opened, false)
                case .identityTaken, .ownerUnavailable:
                    throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "user \(userID) has a link but no profile")
                }
            }
            if let email = verifiedEmail, services.configuration.emailLinking == .verified,
               let ownerID = try table.read(Keys.email(email))?["userId"]?.stringValue {
                let now = services.clock.nowSeconds
                let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: now)
                switch try opener.open(userID: ownerID, identity: identity, profileName: request.profileName, device: request.device,
                                       joining: linked, logger: logger) {
                case .opened(let opened):
                    logger.info("linked a new identity to an existing user by verified email",
                                ["userId": .string(ownerID), "provider": .string(identity.provider.rawValue)])
                    return (opened, false)
                case .identityTaken:
                    continue  // the identity got linked meanwhile: re-read
                case .ownerUnavailable:
                    // The email's owner already has another identity of this provider (or vanished):
                    // this identity becomes a user of its own, without the email claim.
                    claimEmail = false
                }
            } else if let email = verifiedEmail, services.configuration.emailLinking == .never, try table.read(Keys.email(email)) != nil {
                claimEmail = false
            }
            switch try createUser(identity, request: request, claimEmail: claimEmail, logger: logger) {
            case .created(let opened): return (opened, true)
            case .identityTaken: continue  // lost the race for this identity: sign in to the winner
            case .emailTaken:
                // Someone claimed the email meanwhile: join them (verified linking) or skip the claim.
                if services.configuration.emailLinking == .never { claimEmail = false }
            }
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "sign-in gave up")
    }

    enum Creation {
        case created(SessionOpener.Opened)
        case identityTaken
        case emailTaken
    }

    enum CreationStep: Hashable { case profile, link, email }

    /// The user, both sides of its link, the email claim, the first session and its refresh token:
    /// one transaction.
    func createUser(_ identity: VerifiedIdentity, request: Request, claimEmail: Bool, logger: Logger) throws(AuthError) -> Creation {
        let configuration = services.configuration
        let userID = newIdentifier(services.random)
        let sessionID = newIdentifier(services.random)
        let refresh = RefreshTokenCredential(userID: userID, random: services.random)
        let tokens = try services.issueTokens(userID: userID, sessionID: sessionID, refresh: refresh, logger: logger)
        let now = services.clock.nowSeconds
        let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: now)
        var profile = UserProfile(userID: userID, email: identity.email, emailVerified: identity.emailVerified,
                                  displayName: identity.name ?? request.profileName, pictureURL: identity.picture, now: now)
        profile.activeSessions[sessionID] = now
        profile.version = 1
        let user = UserView(profile: profile, identities: [linked])
        let session = SessionRecord(userID: userID, sessionID: sessionID, device: request.device, now: now)

        var plan = TransactionPlan<CreationStep>()
        plan.add(.profile, .put(profile.item, condition: "attribute_not_exists(PK)"))
        plan.add(.link, .put(linked.linkItem(userID: userID), condition: "attribute_not_exists(PK)"))
        plan.add([.put(linked.userSideItem(userID: userID), condition: "attribute_not_exists(PK)")])
        if claimEmail, let email = identity.email {
            var emailItem = Keys.email(email).item
            emailItem["userId"] = .s(userID)
            plan.add(.email, .put(emailItem, condition: "attribute_not_exists(PK)"))
        }
        plan.add([
            .put(session.item(refreshTokenTTL: configuration.refreshTokenTTL), condition: "attribute_not_exists(PK)"),
            .put(services.refreshRecord(for: refresh, sessionID: sessionID, sessionCreatedAt: now, user: UserSnapshot(user))),
        ])
        guard let cancellation = try services.table.run(plan) else {
            logger.info("created a user", ["userId": .string(userID), "provider": .string(identity.provider.rawValue)])
            return .created(SessionOpener.Opened(user: user, session: session, tokens: tokens))
        }
        if cancellation.failed(.link) { return .identityTaken }
        if cancellation.failed(.email) { return .emailTaken }
        throw AuthError(.internal, "internal error", detail: "user creation cancelled: \(cancellation.codes)")
    }
}

/// Opens a session for a user (enforcing AUTH_MAX_SESSIONS) together with its first refresh token,
/// and refreshes the profile, in one transaction guarded by the profile's version. Joining a new
/// identity to the user (sign-in by verified email) rides in the same transaction.
struct SessionOpener {
    let services: AuthServices

    struct Opened {
        var user: UserView
        var session: SessionRecord
        var tokens: IssuedTokens
    }

    enum Outcome {
        case opened(Opened)
        /// Joining: the identity was linked to someone meanwhile.
        case identityTaken
        /// Joining: the user is gone or already has an identity of this provider.
        case ownerUnavailable
    }

    enum Step: Hashable { case profile, link, userSide }

    func open(userID: String, identity: VerifiedIdentity, profileName: String?, device: [String: String],
              joining: LinkedIdentity?, logger: Logger) throws(AuthError) -> Outcome {
        let configuration = services.configuration
        let sessionID = newIdentifier(services.random)
        let refresh = RefreshTokenCredential(userID: userID, random: services.random)
        let tokens = try services.issueTokens(userID: userID, sessionID: sessionID, refresh: refresh, logger: logger)
        for attempt in 0...AuthServices.contentionBackoff.maximumRetries {
            if attempt > 0 { services.waitAfterLosingRace(attempt - 1) }
            let now = services.clock.nowSeconds
            guard var user = try services.loadUser(userID) else {
                if joining != nil { return .ownerUnavailable }
                throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "user \(userID) has a link but no profile")
            }
            if let joining {
                if user.identities.contains(where: { $0.provider == joining.provider }) { return .ownerUnavailable }
                user.identities.append(joining)
                user.profile.identityCount += 1
            }
            let expectedVersion = user.profile.version
            user.profile.refresh(from: identity, profileName: profileName)
            user.profile.lastSignInAt = now
            user.profile.updatedAt = now
            // Least recently active first; a full house evicts until the new session fits.
            let evicted = user.profile.activeSessions.sorted { ($0.value, $0.key) < ($1.value, $1.key) }
                .prefix(max(0, user.profile.activeSessions.count - configuration.maxSessions + 1)).prefix(90).map(\.key)
            for sessionID in evicted { user.profile.activeSessions[sessionID] = nil }
            user.profile.activeSessions[sessionID] = now
            user.profile.version = expectedVersion + 1

            let session = SessionRecord(userID: userID, sessionID: sessionID, device: device, now: now)
            var plan = TransactionPlan<Step>()
            plan.add(.profile, .put(user.profile.item, condition: "#version = :expected",
                                    attributes: ExpressionAttributes(names: ["#version": "version"], values: [":expected": .n(expectedVersion)])))
            if let joining {
                plan.add(.link, .put(joining.linkItem(userID: userID), condition: "attribute_not_exists(PK)"))
                plan.add(.userSide, .put(joining.userSideItem(userID: userID), condition: "attribute_not_exists(PK)"))
            }
            plan.add([
                .put(session.item(refreshTokenTTL: configuration.refreshTokenTTL), condition: "attribute_not_exists(PK)"),
                .put(services.refreshRecord(for: refresh, sessionID: sessionID, sessionCreatedAt: now, user: UserSnapshot(user))),
            ])
            plan.add(evicted.map { evictedID in
                .update(key: Keys.session(userID, evictedID), update: "SET #status = :revoked, #ttl = :ttl",
                        attributes: ExpressionAttributes(names: ["#status": "status", "#ttl": "ttl"],
                                                         values: [":revoked": .s("REVOKED"), ":ttl": .n(now + RefreshTokenRecord.revokedVisibility)]))
            })
            guard let cancellation = try services.table.run(plan) else {
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
                return .opened(Opened(user: user, session: session, tokens: tokens))
            }
            if cancellation.failed(.link) { return .identityTaken }
            if cancellation.failed(.profile) || cancellation.failed(.userSide) { continue }  // a concurrent write changed the user
            throw AuthError(.internal, "internal error", detail: "session opening cancelled: \(cancellation.codes)")
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
