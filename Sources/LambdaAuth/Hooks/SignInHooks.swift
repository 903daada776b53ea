import Logging

/// The hooks of one sign-in: each asked at most once however often the flow's optimistic retries
/// run, and always before the write they guard, so that a deny or a `deny` error leaves the store
/// exactly as it was.
struct SignInHooks: Sendable {
    let hooks: Hooks
    let request: HookRequest
    /// The sign-in's provider (`guest` for a guest).
    let provider: String
    /// nil for a guest.
    let identity: VerifiedIdentity?
    let device: [String: String]
    private var creationAllowed = false
    private var admitted: Set<String> = []

    init(hooks: Hooks, request: HookRequest, provider: String, identity: VerifiedIdentity?, device: [String: String]) {
        self.hooks = hooks
        self.request = request
        self.provider = provider
        self.identity = identity
        self.device = device
    }

    /// Before a new user (a guest too) is written. A guest's upgrade creates no user: no call.
    mutating func beforeUserCreated(logger: Logger) throws(AuthError) {
        guard !creationAllowed else { return }
        try hooks.decide(payload(.beforeUserCreated, user: nil), request: request, logger: logger)
        creationAllowed = true
    }

    /// Before an existing user's session opens, whichever provider proved who they are.
    mutating func beforeSignIn(_ user: UserView, logger: Logger) throws(AuthError) {
        guard !admitted.contains(user.profile.userID) else { return }
        try hooks.decide(payload(.beforeSignIn, user: user.json), request: request, logger: logger)
        admitted.insert(user.profile.userID)
    }

    /// A sign-in completed by its second factor (contract section 21) was admitted by
    /// `beforeSignIn` when it asked for the factor: its session opens without asking again.
    mutating func admittedEarlier(_ userID: String) {
        admitted.insert(userID)
    }

    /// The `accessTokenClaims` call of the token this sign-in mints for `user`'s session.
    func accessTokenClaims(user: JSONValue, sessionID: String) -> AccessTokenClaimsCall {
        var sent = payload(.accessTokenClaims, user: user)
        sent.sessionID = sessionID
        return AccessTokenClaimsCall(hooks: hooks, request: request, payload: sent)
    }

    func payload(_ type: HookType, user: JSONValue?) -> HookPayload {
        HookPayload(type: type, provider: provider, identity: identity, user: user, device: device)
    }
}

/// The `accessTokenClaims` hook of one access token, handed to the mint (`TokenIssuing`), the one
/// place every access token is signed: sign-in, refresh, and whatever else issues one. A flow
/// whose write comes before the mint (refresh) asks it first, so that a refusal leaves the store
/// as it was; the mint then takes the answer already given.
struct AccessTokenClaimsCall: Sendable {
    let hooks: Hooks
    let request: HookRequest
    var payload: HookPayload
    private(set) var answer: [String: JSONValue]?

    init(hooks: Hooks, request: HookRequest, payload: HookPayload) {
        self.hooks = hooks
        self.request = request
        self.payload = payload
    }

    /// No hook: for tokens minted outside a request (tools, tests).
    static let none = AccessTokenClaimsCall(hooks: .none, request: HookRequest(),
                                            payload: HookPayload(type: .accessTokenClaims, provider: nil, identity: nil, user: nil))

    /// Asks the hook now, before a write it must be able to stop, telling it `user` as the flow
    /// read it; a later ask (the mint's) takes this answer.
    mutating func askBeforeWrite(user: JSONValue, logger: Logger) throws(AuthError) {
        guard answer == nil else { return }
        payload.user = user
        _ = try claims(logger: logger)
    }

    /// The claims to add, asking the hook the first time only.
    mutating func claims(logger: Logger) throws(AuthError) -> [String: JSONValue] {
        if let answer { return answer }
        let claims = try hooks.claims(payload, request: request, logger: logger)
        answer = claims
        return claims
    }
}
