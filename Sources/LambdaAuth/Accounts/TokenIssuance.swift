/// What every successful sign-in and refresh returns besides the user: a new access token, a new
/// refresh token (stored by the flow's transaction) and temporary credentials.
struct IssuedTokens {
    let accessToken: String
    let refreshToken: String
    let credentials: TemporaryCredentials

    func json(configuration: AuthConfiguration) -> (tokens: JSONValue, credentials: JSONValue) {
        let tokens: JSONValue = [
            "accessToken": .string(accessToken), "tokenType": "Bearer", "expiresIn": .number(configuration.accessTokenTTL),
            "refreshToken": .string(refreshToken), "refreshTokenExpiresIn": .number(configuration.refreshTokenTTL),
        ]
        return (tokens, credentials.json)
    }
}

extension AuthServices {
    /// Mints the access token and credentials for a session whose new refresh token is `refresh`.
    /// Sign-in does it before its write, so a failure (no key, STS down) leaves the store as it
    /// was; refresh after its rotation commits, so that lost races never cost an STS call each.
    func issueTokens(userID: String, sessionID: String, refresh: RefreshTokenCredential, logger: Logger) throws(AuthError) -> IssuedTokens {
        guard let issuer = try accessTokenIssuer(create: true, logger: logger) else {
            throw AuthError(.internal, "internal error", detail: "no access-token signing key")
        }
        let now = clock.nowSeconds
        let accessToken = try issuer.issue(userID: userID, sessionID: sessionID, now: now, random: random)
        let credentials = try credentialIssuer(logger: logger).issue(userID: userID, now: now)
        return IssuedTokens(accessToken: accessToken, refreshToken: refresh.token, credentials: credentials)
    }

    /// The stored form of a refresh token of `sessionID`'s family, issued to `user`.
    func refreshRecord(for refresh: RefreshTokenCredential, sessionID: String, sessionCreatedAt: Int64, user: UserSnapshot) -> Item {
        let now = clock.nowSeconds
        return RefreshTokenRecord(credential: refresh, familyID: sessionID, createdAt: now,
                                  expiresAt: now + configuration.refreshTokenTTL, sessionCreatedAt: sessionCreatedAt, user: user).item
    }

    /// PROFILE and every identity of a user, in one query.
    func loadUser(_ userID: String) throws(AuthError) -> UserView? {
        let page = try table.queryAll(QueryRequest(
            keyCondition: "PK = :pk AND SK < :upper",
            attributes: ExpressionAttributes(values: [":pk": .s(Keys.user(userID)), ":upper": .s(Keys.profileAndIdentitiesUpperBound)])))
        var profile: UserProfile?
        var identities: [LinkedIdentity] = []
        for item in page {
            if let parsed = UserProfile(item: item) { profile = parsed }
            if let identity = LinkedIdentity(userSideItem: item) { identities.append(identity) }
        }
        return profile.map { UserView(profile: $0, identities: identities) }
    }
}

extension RefreshTokenRecord {
    static let usedVisibility: Int64 = 3600
    static let revokedVisibility: Int64 = 86_400
    static let expiredVisibility: Int64 = 86_400
}

extension Table {
    /// Every item of a query, following pagination; table errors become the contract's.
    func queryAll(_ request: QueryRequest) throws(AuthError) -> [Item] {
        var request = request
        var items: [Item] = []
        do {
            while true {
                let page = try query(request)
                items += page.items
                guard let next = page.lastEvaluatedKey else { return items }
                request.exclusiveStartKey = next
            }
        } catch {
            throw error.authError
        }
    }

    func read(_ key: TableKey) throws(AuthError) -> Item? {
        do {
            return try getItem(key)
        } catch {
            throw error.authError
        }
    }

    /// Runs a transaction; a cancellation comes back as its reasons (one per action) for the flow to
    /// interpret, every other failure as the contract's error.
    func transact(_ actions: [TransactWriteAction]) throws(AuthError) -> [CancellationReason]? {
        do {
            try transactWrite(actions)
            return nil
        } catch .transactionCanceled(let reasons) {
            return reasons
        } catch {
            throw error.authError
        }
    }
}

extension [CancellationReason] {
    func failed(_ index: Int) -> Bool {
        index < count && self[index].code == "ConditionalCheckFailed"
    }
}
