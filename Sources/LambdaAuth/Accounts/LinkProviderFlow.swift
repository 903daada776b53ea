/// `link-provider`: attach or detach a provider identity for the user our access token names.
public struct LinkProviderFlow: Sendable {
    let services: AuthServices

    public init(services: AuthServices) { self.services = services }

    enum Action { case link, unlink }

    public func handle(_ request: InvocationRequest, logger: Logger) throws(AuthError) -> InvocationResponse {
        let body = RequestBody(request.body)
        let action = try LinkProviderFlow.action(of: request, body: body)
        let caller = try authenticate(request, body: body, logger: logger)
        let providerName = try body.requiredString("provider", maximumBytes: 64)
        let provider = try ProviderName.parse(providerName)
        switch action {
        case .link:
            let idToken = try body.requiredString("idToken", maximumBytes: 16 << 10)
            let nonce = try body.optionalString("nonce", maximumBytes: 1024, emptyIsAbsent: true)
            let identity = try services.verifier.verify(idToken, provider: provider, nonce: nonce)
            return try link(identity, to: caller, logger: logger)
        case .unlink:
            return try unlink(provider, from: caller, logger: logger)
        }
    }

    static func action(of request: InvocationRequest, body: RequestBody) throws(AuthError) -> Action {
        if request.method == "DELETE" { return .unlink }
        guard request.method == "POST" else {
            throw AuthError(.invalidRequest, "method \(request.method) is not supported; use POST to link or DELETE to unlink")
        }
        switch try body.optionalString("action", maximumBytes: 16) {
        case nil, "link"?: return .link
        case "unlink"?: return .unlink
        default: throw AuthError(.invalidRequest, "action must be link or unlink")
        }
    }

    /// The caller: a valid access token whose session is still one of its user's active
    /// sessions, and that user as one Query read it.
    struct Caller {
        var claims: AccessTokenClaims
        var user: UserView
    }

    /// Bearer token from the Authorization header (HTTP events) or `accessToken` (direct). The
    /// session check reads the profile's active sessions rather than the SESSION# item: the same
    /// Query gives the flow its user, and the write's condition re-checks it atomically.
    func authenticate(_ request: InvocationRequest, body: RequestBody, logger: Logger) throws(AuthError) -> Caller {
        let token: String
        if request.kind.isHTTP {
            guard let header = request.headers["authorization"] else {
                throw AuthError(.accessTokenInvalid, "the Authorization header with a Bearer access token is missing")
            }
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw AuthError(.accessTokenInvalid, "the Authorization header must be 'Bearer <access token>'")
            }
            token = String(parts[1]).trimmingCharacters(in: " ")
        } else {
            do throws(AuthError) {
                guard let value = try body.optionalString("accessToken", maximumBytes: 8192) else {
                    throw AuthError(.accessTokenInvalid, "accessToken is missing")
                }
                token = value
            } catch where error.code == .invalidRequest {
                throw AuthError(.accessTokenInvalid, "accessToken must be a string")
            }
        }
        guard let issuer = try services.accessTokenIssuer(create: false, logger: logger) else {
            throw AuthError(.accessTokenInvalid, "the access token was not signed by this service's key")
        }
        let claims = try issuer.verify(token, now: services.clock.nowSeconds)
        return Caller(claims: claims, user: try currentUser(of: claims))
    }

    /// The token's user, read now, provided the token's session is still active.
    func currentUser(of claims: AccessTokenClaims) throws(AuthError) -> UserView {
        guard let user = try services.loadUser(claims.userID) else {
            throw AuthError(.accessTokenInvalid, "the access token's user no longer exists")
        }
        guard user.profile.activeSessions[claims.sessionID] != nil else {
            throw AuthError(.accessTokenInvalid, "the access token's session was signed out")
        }
        return user
    }

    enum LinkStep: Hashable { case link, userSide, profile }

    /// GetItem of the link, then one transaction (after the caller check's Query: 3 requests).
    /// The profile's version condition makes the user copy read by the caller check exact and
    /// the session check part of the write: a sign-out racing the link wins or loses as a whole.
    func link(_ identity: VerifiedIdentity, to caller: Caller, logger: Logger) throws(AuthError) -> InvocationResponse {
        let table = services.table
        var user = caller.user
        for attempt in 0...AuthServices.contentionBackoff.maximumRetries {
            if attempt > 0 {
                services.waitAfterLosingRace(attempt - 1)
                user = try currentUser(of: caller.claims)
            }
            if let owner = try table.read(Keys.identityLink(identity.provider, identity.subject))?["userId"]?.stringValue {
                guard owner == caller.claims.userID else {
                    throw AuthError(.identityLinkedToOtherUser, "this \(identity.provider.rawValue) account is already linked to another user")
                }
                return InvocationResponse(body: ["user": user.json])
            }
            if user.identities.contains(where: { $0.provider == identity.provider }) {
                throw AuthError(.providerAlreadyLinked, "the user already has a different \(identity.provider.rawValue) account linked")
            }
            let now = services.clock.nowSeconds
            let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: now)
            var plan = TransactionPlan<LinkStep>()
            plan.add(.link, .put(linked.linkItem(userID: user.profile.userID), condition: "attribute_not_exists(PK)"))
            plan.add(.userSide, .put(linked.userSideItem(userID: user.profile.userID), condition: "attribute_not_exists(PK)"))
            plan.add(.profile, profileUpdate(user, sessionID: caller.claims.sessionID, identityDelta: 1, now: now))
            guard let cancellation = try table.run(plan) else {
                logger.info("linked an identity", ["userId": .string(user.profile.userID), "provider": .string(identity.provider.rawValue)])
                user.identities.append(linked)
                user.profile.apply(identityDelta: 1, now: now)
                return InvocationResponse(body: ["user": user.json])
            }
            // Raced with another write of this user or of this identity: the re-read decides.
            guard cancellation.failed(.link) || cancellation.failed(.userSide) || cancellation.failed(.profile) else {
                throw AuthError(.internal, "internal error", detail: "link cancelled: \(cancellation.codes)")
            }
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "link gave up")
    }

    /// One transaction after the caller check's Query (2 requests).
    func unlink(_ provider: ProviderName, from caller: Caller, logger: Logger) throws(AuthError) -> InvocationResponse {
        var user = caller.user
        for attempt in 0...AuthServices.contentionBackoff.maximumRetries {
            if attempt > 0 {
                services.waitAfterLosingRace(attempt - 1)
                user = try currentUser(of: caller.claims)
            }
            let userID = user.profile.userID
            // Unlinking what is not linked leaves the user as requested: an idempotent 200.
            guard let identity = user.identities.first(where: { $0.provider == provider }) else {
                return InvocationResponse(body: ["user": user.json])
            }
            guard user.identities.count > 1 else {
                throw AuthError(.lastIdentity, "the \(provider.rawValue) identity is the user's last; link another before removing it")
            }
            let now = services.clock.nowSeconds
            let reasons = try services.table.transact([
                profileUpdate(user, sessionID: caller.claims.sessionID, identityDelta: -1, now: now),
                .delete(key: Keys.userIdentity(userID, provider), condition: "subject = :subject",
                        attributes: ExpressionAttributes(values: [":subject": .s(identity.subject)])),
                .delete(key: Keys.identityLink(provider, identity.subject), condition: "userId = :user",
                        attributes: ExpressionAttributes(values: [":user": .s(userID)])),
            ])
            guard reasons != nil else {
                logger.info("unlinked an identity", ["userId": .string(userID), "provider": .string(provider.rawValue)])
                user.identities.removeAll { $0.provider == provider }
                user.profile.apply(identityDelta: -1, now: now)
                return InvocationResponse(body: ["user": user.json])
            }
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "unlink gave up")
    }

    /// The profile write of a link or unlink: conditional on the version the flow read (so its
    /// copy of the user was exact) and on the caller's session still being active; bumps the
    /// version because the user's identities change.
    func profileUpdate(_ user: UserView, sessionID: String, identityDelta: Int64, now: Int64) -> TransactWriteAction {
        .update(key: Keys.profileKey(user.profile.userID),
                update: "SET identityCount = identityCount + :delta, updatedAt = :now, #version = #version + :one",
                condition: "attribute_exists(activeSessions.#sid) AND #version = :version",
                attributes: ExpressionAttributes(
                    names: ["#sid": sessionID, "#version": "version"],
                    values: [":delta": .n(identityDelta), ":now": .s(Timestamps.format(now)), ":one": .n(1),
                             ":version": .n(user.profile.version)]))
    }
}

extension UserProfile {
    /// What `LinkProviderFlow.profileUpdate` did to the stored profile, applied to a copy.
    mutating func apply(identityDelta: Int64, now: Int64) {
        identityCount += identityDelta
        updatedAt = now
        version += 1
    }
}
