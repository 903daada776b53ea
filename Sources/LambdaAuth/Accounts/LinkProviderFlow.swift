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
            return try link(identity, to: caller.userID, logger: logger)
        case .unlink:
            return try unlink(provider, from: caller.userID, logger: logger)
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

    /// Bearer token from the Authorization header (HTTP events) or `accessToken` (direct).
    func authenticate(_ request: InvocationRequest, body: RequestBody, logger: Logger) throws(AuthError) -> AccessTokenClaims {
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
        guard let session = try services.table.read(Keys.session(claims.userID, claims.sessionID)).flatMap(SessionRecord.init(item:)),
              session.status == "ACTIVE" else {
            throw AuthError(.accessTokenInvalid, "the access token's session was signed out")
        }
        return claims
    }

    func link(_ identity: VerifiedIdentity, to userID: String, logger: Logger) throws(AuthError) -> InvocationResponse {
        let table = services.table
        for _ in 0..<5 {
            if let owner = try table.read(Keys.identityLink(identity.provider, identity.subject))?["userId"]?.stringValue {
                guard owner == userID else {
                    throw AuthError(.identityLinkedToOtherUser, "this \(identity.provider.rawValue) account is already linked to another user")
                }
                return try respond(userID)
            }
            guard let user = try services.loadUser(userID) else {
                throw AuthError(.accessTokenInvalid, "the access token's user no longer exists")
            }
            if user.identities.contains(where: { $0.provider == identity.provider }) {
                throw AuthError(.providerAlreadyLinked, "the user already has a different \(identity.provider.rawValue) account linked")
            }
            let now = services.clock.nowSeconds
            let linked = LinkedIdentity(provider: identity.provider, subject: identity.subject, email: identity.email, linkedAt: now)
            let reasons = try table.transact([
                .put(linked.linkItem(userID: userID), condition: "attribute_not_exists(PK)"),
                .put(linked.userSideItem(userID: userID), condition: "attribute_not_exists(PK)"),
                .update(key: Keys.profileKey(userID), update: "SET identityCount = identityCount + :one, updatedAt = :now",
                        condition: "attribute_exists(PK)",
                        attributes: ExpressionAttributes(values: [":one": .n(1), ":now": .s(Timestamps.format(now))])),
            ])
            guard let reasons else {
                logger.info("linked an identity", ["userId": .string(userID), "provider": .string(identity.provider.rawValue)])
                return try respond(userID)
            }
            if reasons.failed(0) || reasons.failed(1) { continue }  // raced: the re-read decides
            throw AuthError(.accessTokenInvalid, "the access token's user no longer exists")
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "link gave up")
    }

    func unlink(_ provider: ProviderName, from userID: String, logger: Logger) throws(AuthError) -> InvocationResponse {
        let table = services.table
        for _ in 0..<5 {
            guard let user = try services.loadUser(userID) else {
                throw AuthError(.accessTokenInvalid, "the access token's user no longer exists")
            }
            // Unlinking what is not linked leaves the user as requested: an idempotent 200.
            guard let identity = user.identities.first(where: { $0.provider == provider }) else { return try respond(userID) }
            guard user.identities.count > 1 else {
                throw AuthError(.lastIdentity, "the \(provider.rawValue) identity is the user's last; link another before removing it")
            }
            let now = services.clock.nowSeconds
            let reasons = try table.transact([
                .update(key: Keys.profileKey(userID), update: "SET identityCount = identityCount - :one, updatedAt = :now",
                        condition: "identityCount > :one",
                        attributes: ExpressionAttributes(values: [":one": .n(1), ":now": .s(Timestamps.format(now))])),
                .delete(key: Keys.userIdentity(userID, provider), condition: "subject = :subject",
                        attributes: ExpressionAttributes(values: [":subject": .s(identity.subject)])),
                .delete(key: Keys.identityLink(provider, identity.subject), condition: "userId = :user",
                        attributes: ExpressionAttributes(values: [":user": .s(userID)])),
            ])
            guard let reasons else {
                logger.info("unlinked an identity", ["userId": .string(userID), "provider": .string(provider.rawValue)])
                return try respond(userID)
            }
            if reasons.failed(0) {
                throw AuthError(.lastIdentity, "the \(provider.rawValue) identity is the user's last; link another before removing it")
            }
        }
        throw AuthError(.storeUnavailable, "the user store is too contended; try again", detail: "unlink gave up")
    }

    func respond(_ userID: String) throws(AuthError) -> InvocationResponse {
        guard let user = try services.loadUser(userID) else {
            throw AuthError(.accessTokenInvalid, "the access token's user no longer exists")
        }
        return InvocationResponse(body: ["user": user.json])
    }
}
