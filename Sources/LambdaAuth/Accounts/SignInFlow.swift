import Logging

/// What `signin` is asked (contract section 3): a proof, read by the registry entry its
/// `provider` names, and the device the session is opened for.
struct SignInRequest: Sendable {
    var body: RequestBody
    var origin: RequestOrigin
    /// What the app's hooks are told of the request, and where their calls are recorded.
    var hookRequest = HookRequest()
}

struct SignInResult {
    var user: UserView
    var isNewUser: Bool
    var session: SessionRecord
    var tokens: IssuedTokens
}

/// `signin`, whatever proves it: the provider proves, this flow finds or creates the user, opens
/// the session, issues tokens and says so once, in as few requests as the case allows: a
/// returning user costs a GetItem of the link, a Query of the user and one transaction (and a
/// Query of its tokens when the session limit evicts one, whose tokens are revoked in that
/// transaction); a new user two GetItems (link, email claim) and one transaction that creates the
/// user and its first session together; a passkey, whose link (read by its proof) names the
/// user, the Query and the transaction.
struct SignInFlow: Sendable {
    let providers: ProviderRegistry
    let guests: GuestSignInFlow
    let tokens: any TokenIssuing
    let store: AccountStore
    let clock: any WallClock
    let random: any RandomSource
    let retry: OptimisticRetry
    let deletion: AccountDeletion
    let emailLinking: AuthConfiguration.EmailLinking
    let maxSessions: Int
    let apple: AppleAccountTokens
    /// The app's hooks (contract section 19); none unless the handler's composition configures them.
    var hooks: Hooks = .none
    /// AUTH_MFA=optional: users with an active factor get an mfaToken, not a session.
    var secondFactor: SecondFactorGate? = nil

    func signIn(_ request: SignInRequest, logger: Logger) throws(AuthError) -> SignInResult {
        // The provider first: a mistyped one ("Guest") is named as such, not as a missing token.
        let proof = try providers.entry(for: request.body).prove(request.body, for: .signIn, logger: logger)
        let device = try SignInRequest.device(request.body)
        guard let proof else {
            let guestHooks = SignInHooks(hooks: hooks, request: request.hookRequest, provider: "guest", identity: nil,
                                         device: device)
            return try guests.signIn(device: device, origin: request.origin, hooks: guestHooks, logger: logger)
        }
        // The seam of the coming sign-in hooks and second factor: the identity is proven and
        // nothing is written yet.
        let identity = proof.identity
        // The hooks are asked further in, where a user is created or a session opened.
        let signInHooks = SignInHooks(hooks: hooks, request: request.hookRequest, provider: identity.provider.rawValue, identity: identity,
                                      device: device)
        // Before any write: a refused code signs nobody in.
        let grant = try proof.authorizationCode.map { (code) throws(AuthError) in try apple.exchange(code, for: identity) }
        let result: SignInResult
        if let ceremony = proof.ceremony {
            // The credential names its user: that user's new session, with the ceremony's writes
            // in its transaction; no one is found by the identity, no one created.
            var minted = MintedSessions(tokens: tokens, random: random, hooks: signInHooks, logger: logger, assurance: .of(proof),
                                        proofUse: proof.use)
            switch try openSession(userID: ceremony.userID, minted: &minted, proof: proof, device: device, joining: nil,
                                   ceremony: ceremony.writes, logger: logger) {
            case .opened(let opened): result = opened
            case .ceremonyRefused(let reasons): throw ceremony.refusal(reasons)
            case .userDeleted, .userUnavailable, .identityTaken: throw ceremony.userGone
            }
        } else {
            result = try findOrCreateUser(proof, device: device, hooks: signInHooks, logger: logger)
        }
        if let grant {
            try apple.keep(grant, userID: result.user.profile.userID, subject: identity.subject, logger: logger)
        }
        logger.info("signed in", metadata: ["userId": .string(result.user.profile.userID), "sessionId": .string(result.session.sessionID),
                                  "provider": .string(identity.provider.rawValue), "newUser": .bool(result.isNewUser)])
        return result
    }

    /// The identity's user (linked already, or joined by verified email) or a new one. Creation is
    /// conditional on the link not existing, so the losers of concurrent first sign-ins of one
    /// identity re-read the link and sign in to the winner.
    func findOrCreateUser(_ proof: ProvenIdentity, device: [String: String], hooks: SignInHooks,
                          logger: Logger) throws(AuthError) -> SignInResult {
        let identity = proof.identity
        // A non-ASCII address has no key: it joins no one and claims nothing (EmailKey).
        let verifiedEmail = identity.emailVerified ? identity.email.flatMap(EmailKey.of) : nil
        var claimEmail = verifiedEmail != nil
        // Fixed for the whole sign-in, so a lost race retries with the tokens already minted.
        let newUserID = newIdentifier(random)
        var minted = MintedSessions(tokens: tokens, random: random, hooks: hooks, logger: logger, assurance: .of(proof),
                                    proofUse: proof.use)
        return try retry.run("sign-in") { () throws(AuthError) -> SignInResult? in
            if let userID = try store.linkedUserID(identity.provider, identity.subject) {
                switch try openSession(userID: userID, minted: &minted, proof: proof, device: device, joining: nil,
                                       logger: logger) {
                case .opened(let result): return result
                case .userDeleted: return nil  // a new user, next attempt
                case .userUnavailable:
                    // A deletion's last transaction removes the profile and the links together:
                    // a link read before it and a profile read after it is that race, not damage,
                    // and the link read again leads to whoever holds the identity now.
                    if try store.linkedUserID(identity.provider, identity.subject) != userID { return nil }
                    throw AuthError(.storeUnavailable, "the user store is unavailable", detail: "user \(userID) has a link but no profile")
                case .identityTaken, .ceremonyRefused:
                    throw .internalError("a session opening without joining or ceremony found a condition failed")
                }
            }
            if let email = verifiedEmail, let owner = try store.emailOwner(email) {
                if emailLinking == .verified {
                    let joining = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email,
                                                 linkedAt: clock.nowSeconds)
                    switch try openSession(userID: owner, minted: &minted, proof: proof, device: device, joining: joining,
                                           logger: logger) {
                    case .opened(let result):
                        logger.info("linked a new identity to an existing user by verified email",
                                    metadata: ["userId": .string(owner), "provider": .string(identity.provider.rawValue)])
                        return result
                    case .identityTaken, .userDeleted:
                        return nil  // the identity got linked meanwhile, or the owner is gone: re-read
                    case .userUnavailable:
                        // The email's owner already has another identity of this provider (or
                        // vanished): this identity becomes a user of its own, without the claim.
                        claimEmail = false
                    case .ceremonyRefused:
                        throw .internalError("a session opening without a ceremony refused one")
                    }
                } else {
                    claimEmail = false
                }
            }
            switch try createUser(proof, minted: &minted, userID: newUserID, device: device, claimEmail: claimEmail,
                                  logger: logger) {
            case .created(let result): return result
            case .identityTaken: return nil  // lost the race for this identity: sign in to the winner
            case .emailTaken:
                // Someone claimed the email meanwhile: join them (verified linking) or skip the claim.
                if emailLinking == .never { claimEmail = false }
                return nil
            }
        }
    }

    enum Creation {
        case created(SignInResult)
        case identityTaken
        case emailTaken
    }

    func createUser(_ proof: ProvenIdentity, minted: inout MintedSessions, userID: String, device: [String: String], claimEmail: Bool,
                    logger: Logger) throws(AuthError) -> Creation {
        let identity = proof.identity
        try minted.hooks.beforeUserCreated(logger: logger)
        let minting = minted.session(for: userID)
        let (sessionID, family, refresh) = (minting.sessionID, minting.family, minting.refresh)
        let now = clock.nowSeconds
        let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: now)
        var profile = UserProfile(userID: userID, email: identity.email, emailVerified: identity.emailVerified,
                                  displayName: identity.name ?? proof.profileName, pictureURL: identity.picture, now: now)
        profile.activeSessions[sessionID] = SessionActivity.next(after: [], clock: clock)
        profile.version = 1
        let user = UserView(profile: profile, identities: [linked])
        // A new user has no app metadata yet.
        var issued = try minted.tokens(for: user, appMetadata: [:])
        try minted.spendProof()
        var session = SessionRecord(userID: userID, sessionID: sessionID, device: device, family: family, now: now)
        session.assurance = minted.assurance
        let refreshToken = store.newRefreshToken(refresh, family: family, sessionCreatedAt: now, user: UserSnapshot(user),
                                                 assurance: minted.assurance, now: now)
        issued.refreshTokenLifetime = refreshToken.expiresAt - now
        let account = AccountStore.NewAccount(
            user: user, identity: linked, emailClaim: claimEmail ? identity.email.flatMap(EmailKey.of) : nil, session: session,
            refreshToken: refreshToken)
        switch try store.create(account) {
        case .created:
            logger.info("created a user", metadata: ["userId": .string(userID), "provider": .string(identity.provider.rawValue)])
            return .created(SignInResult(user: user, isNewUser: true, session: session, tokens: issued))
        case .identityTaken: return .identityTaken
        case .emailTaken: return .emailTaken
        }
    }

    enum SessionOpening {
        case opened(SignInResult)
        /// Joining: the identity got linked to someone meanwhile.
        case identityTaken
        /// The user is gone, or (joining) already has an identity of this provider.
        case userUnavailable
        /// The user was being deleted: the deletion is finished now, and its links are gone.
        case userDeleted
        /// A condition of the proof's own writes failed (`AccountStore.SessionOpening.ceremony`).
        case ceremonyRefused([CancellationReason])
    }

    /// Opens a session for an existing user (enforcing AUTH_MAX_SESSIONS) with its first refresh
    /// token and refreshes the profile from the identity, in one transaction guarded by the
    /// profile's version. `joining` (sign-in by verified email) links the identity in the same
    /// transaction.
    func openSession(userID: String, minted: inout MintedSessions, proof: ProvenIdentity, device: [String: String],
                     joining: LinkedIdentity?, ceremony: [TransactWriteAction] = [], logger: Logger) throws(AuthError) -> SessionOpening {
        let minting = minted.session(for: userID)
        let (sessionID, family, refresh) = (minting.sessionID, minting.family, minting.refresh)
        return try retry.run("session opening") { () throws(AuthError) -> SessionOpening? in
            let now = clock.nowSeconds
            guard var user = try store.user(userID) else { return .userUnavailable }
            if user.profile.deletionRequestedAt != nil {
                try deletion.finish(userID: userID, logger: logger)
                return .userDeleted
            }
            // The app's word first: a user it refuses gets no session and no mfaToken either.
            try minted.hooks.beforeSignIn(user, logger: logger)
            // The seam's second half: a user with an active factor gets an mfaToken, not a
            // session, unless this proof is two factors already (contract section 21).
            if let secondFactor, secondFactor.applies(to: user, proof: proof) {
                // The first factor is used up by asking for the second.
                try minted.spendProof()
                if let required = try secondFactor.challenge(for: user, proof: proof, device: device, joining: joining != nil,
                                                             logger: logger) {
                    throw required
                }
            }
            // Before the write, as every mint is; the transaction's version condition makes sure
            // the metadata signed is the metadata committed.
            var issued = try minted.tokens(for: user, appMetadata: user.profile.appMetadata)
            try minted.spendProof()
            if user.profile.activeSessions[sessionID] != nil, let opened = try store.session(userID: userID, sessionID: sessionID) {
                // An earlier attempt of this sign-in committed though its answer was lost (a
                // transaction retried after a timeout): the session is open, with these tokens.
                return .opened(SignInResult(user: user, isNewUser: false, session: opened, tokens: issued))
            }
            if let joining {
                if user.identities.contains(where: { $0.provider == joining.provider }) { return .userUnavailable }
                user.identities.append(joining)
                user.profile.identityCount += 1
            }
            let readVersion = user.profile.version
            let previousEmail = user.profile.email
            user.profile.refresh(from: proof.identity, profileName: proof.profileName)
            let emailClaimMove = try store.emailClaimMove(of: user.profile, previousEmail: previousEmail)
            user.profile.lastSignInAt = now
            user.profile.updatedAt = now
            let activity = SessionActivity.next(after: user.profile.activeSessions.values, clock: clock)
            // Least recently active first; a full house evicts until the new session fits.
            let evicted = user.profile.activeSessions.sorted { ($0.value, $0.key) < ($1.value, $1.key) }
                .prefix(max(0, user.profile.activeSessions.count - maxSessions + 1)).prefix(90).map(\.key)
            for evictedID in evicted { user.profile.activeSessions[evictedID] = nil }
            let evictedTokens = evicted.isEmpty ? [] : try store.unrevokedRefreshTokenKeys(of: userID, families: Set(evicted))
            user.profile.activeSessions[sessionID] = activity
            user.profile.version = readVersion + 1
            var session = SessionRecord(userID: userID, sessionID: sessionID, device: device, family: family, now: now)
            session.assurance = minted.assurance
            let refreshToken = store.newRefreshToken(refresh, family: family, sessionCreatedAt: now, user: UserSnapshot(user),
                                                     assurance: minted.assurance, now: now)
            issued.refreshTokenLifetime = refreshToken.expiresAt - now
            let opening = AccountStore.SessionOpening(
                user: user, readVersion: readVersion, joining: joining, session: session, refreshToken: refreshToken,
                evicted: evicted, evictedTokens: evictedTokens, emailClaimMove: emailClaimMove, ceremony: ceremony)
            switch try store.open(opening, now: now) {
            case .opened(let revokedEveryEvictedToken):
                for evictedID in evicted {
                    logger.info("session evicted by the session limit", metadata: ["userId": .string(userID), "sessionId": .string(evictedID)])
                }
                if !revokedEveryEvictedToken { markEvictedTokensRevoked(userID: userID, evicted, now: now, logger: logger) }
                return .opened(SignInResult(user: user, isNewUser: false, session: session, tokens: issued))
            case .identityTaken: return .identityTaken
            case .ceremonyRefused(let reasons): return .ceremonyRefused(reasons)
            case .userChanged: return nil
            }
        }
    }

    /// The evicted sessions' tokens that did not fit in the opening transaction (DynamoDB's 100
    /// actions). Their sessions are already out of the profile and revoked, which stops them;
    /// marking them too keeps the store telling the truth. A failure here changes nothing for
    /// the caller.
    func markEvictedTokensRevoked(userID: String, _ evicted: [String], now: Int64, logger: Logger) {
        do {
            _ = try store.revokeSessions(userID: userID, evicted, gate: nil, now: now, reason: .evicted)
        } catch {
            logger.warning("could not mark an evicted session's tokens revoked", metadata: ["code": .string(error.code.rawValue)])
        }
    }
}

/// The session a sign-in opens: its id, refresh family and first refresh token, fixed once per
/// user the sign-in lands on.
struct MintedSession: Sendable {
    let sessionID: String
    let family: RefreshFamilyKey
    let refresh: RefreshTokenCredential
}

/// Minting happens before the sign-in's write (a failure, such as STS down, leaves the store as
/// it was) but outside its optimistic retries: at most once per user the sign-in lands on (one,
/// unless a race moves the identity to another user), never once per lost race. The access
/// token carries the app metadata of the user as read: only an operator's change between two
/// attempts signs it again. The sign-in's hooks go with it, asked as rarely.
struct MintedSessions {
    let tokens: any TokenIssuing
    let random: any RandomSource
    let logger: Logger
    var hooks: SignInHooks
    /// How the sessions minted here were proven: their tokens' `aal` and `amr`.
    let assurance: Assurance
    private var sessions: [String: MintedSession] = [:]
    private var issued: [String: (appMetadata: [String: JSONValue], tokens: IssuedTokens)] = [:]
    /// The proof's one-time use (an email code), not spent yet.
    private var proofUse: (@Sendable () throws(AuthError) -> Void)?

    init(tokens: any TokenIssuing, random: any RandomSource, hooks: SignInHooks, logger: Logger, assurance: Assurance,
         proofUse: (@Sendable () throws(AuthError) -> Void)? = nil) {
        self.proofUse = proofUse
        self.tokens = tokens
        self.random = random
        self.hooks = hooks
        self.logger = logger
        self.assurance = assurance
    }

    /// Spends the proof (once, whichever attempt gets here first): after the hooks and the mint,
    /// before the sign-in's write, so that a refusal by either leaves the code usable.
    mutating func spendProof() throws(AuthError) {
        guard let use = proofUse else { return }
        proofUse = nil
        try use()
    }

    mutating func session(for userID: String) -> MintedSession {
        if let minted = sessions[userID] { return minted }
        let sessionID = newIdentifier(random)
        let family = RefreshFamilyKey.generate(familyID: sessionID, random: random)
        let minted = MintedSession(sessionID: sessionID, family: family,
                                   refresh: RefreshTokenCredential(userID: userID, family: family, random: random))
        sessions[userID] = minted
        return minted
    }

    mutating func tokens(for user: UserView, appMetadata: [String: JSONValue]) throws(AuthError) -> IssuedTokens {
        let userID = user.profile.userID
        if let minted = issued[userID], minted.appMetadata == appMetadata { return minted.tokens }
        let session = session(for: userID)
        let tokens = try tokens.issueTokens(userID: userID, sessionID: session.sessionID, refresh: session.refresh, anonymous: false,
                                            appMetadata: appMetadata, assurance: assurance,
                                            claimsHook: hooks.accessTokenClaims(user: user.json, sessionID: session.sessionID),
                                            logger: logger)
        issued[userID] = (appMetadata, tokens)
        return tokens
    }
}

extension UserProfile {
    /// Takes the provider's latest data; an absent value never erases a stored one. Apple's
    /// one-time `profile.name` only fills an empty display name.
    mutating func refresh(from identity: VerifiedIdentity, profileName: String?) {
        if let email = identity.email {
            emailVerified = self.email.map(email.sameBytes) == true ? (emailVerified || identity.emailVerified) : identity.emailVerified
            self.email = email
        }
        if let name = identity.name { displayName = name }
        if displayName == nil, let profileName { displayName = profileName }
        if let picture = identity.picture { pictureURL = picture }
    }
}
