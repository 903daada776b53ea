import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Keeps one user signed in to a lambda-auth backend: signs in, hands out a valid access token
/// (refreshing it once for every concurrent caller, the rotated refresh token stored before the
/// new access token is handed out), and tells the app when the session is gone.
///
/// ```swift
/// let auth = AuthClient(baseURL: URL(string: "https://auth.example.com")!,
///                       storage: KeychainSessionStorage(service: "com.example.app.auth"))
/// let user = try await auth.signIn(provider: "apple", idToken: appleIDToken, authorizationCode: code, fullName: name)
/// var request = URLRequest(url: apiURL)
/// try await auth.authorize(&request)
/// ```
public actor AuthClient {
    /// A new stream at each access, for one observer: where things stand first (`signedIn(user)`
    /// or `signedOut`), then every change. Each observer gets every state, so take one stream per
    /// loop (two loops reading one stream would split its states between them). A stream ends
    /// when its loop stops or the client is gone.
    public nonisolated var states: AsyncStream<AuthState> { broadcaster.subscribe() }
    private let broadcaster: StateBroadcaster
    private let transport: Transport
    private let storage: any SessionStorage
    private let retryPolicy: RetryPolicy
    private let now: @Sendable () -> Date
    private var current: StoredSession?
    /// The refresh in flight: every caller that needs a new token while it runs awaits this one.
    private var refreshing: Task<StoredSession, any Error>?
    /// The device of each sign-in that answered MFA_REQUIRED, by its mfaToken: the server binds
    /// the token to it, so `completeSignIn` sends it again.
    private var challengeDevices: [String: [String: JSON]] = [:]

    /// How long before its expiry an access token counts as expired (a request made with it must
    /// still reach the API in time), for tokens that live four times as long or longer; a
    /// shorter-lived token keeps a quarter of its lifetime in reserve instead (`refreshMargin`).
    public static let minimumValidity: TimeInterval = 60

    /// The reserve for a token of `lifetime` seconds. A fixed 60 s would call every token of the
    /// server's shortest lifetime (`AUTH_ACCESS_TOKEN_TTL=60`) too old the moment it is issued:
    /// every call would refresh, and none would work offline.
    static func refreshMargin(lifetime: TimeInterval?) -> TimeInterval {
        guard let lifetime, lifetime > 0 else { return minimumValidity }
        return min(minimumValidity, lifetime / 4)
    }

    /// Whether `session`'s access token has more than its reserve left.
    private func isFresh(_ session: StoredSession) -> Bool {
        session.accessTokenExpiresAt.timeIntervalSince(now()) >= Self.refreshMargin(lifetime: session.accessTokenLifetime)
    }

    public init(baseURL: URL, storage: any SessionStorage = InMemorySessionStorage(), retryPolicy: RetryPolicy = RetryPolicy(),
                urlSession: URLSession = URLSession(configuration: .ephemeral), now: @escaping @Sendable () -> Date = Date.init) {
        transport = Transport(baseURL: baseURL, session: urlSession)
        self.storage = storage
        self.retryPolicy = retryPolicy
        self.now = now
        let stored = try? storage.load()
        current = stored
        broadcaster = StateBroadcaster(stored.map { .signedIn($0.user) } ?? .signedOut)
    }

    deinit { broadcaster.finish() }

    /// How many `states` streams are being read (tests).
    nonisolated var observerCount: Int { broadcaster.observerCount }

    // MARK: the signed-in user

    public var user: User? { current?.user }

    /// What the app's operators gave the user (a role, a plan), as of the last answer.
    public var appMetadata: [String: JSON] { current?.user.appMetadata ?? [:] }

    public var isSignedIn: Bool { current != nil }

    /// What the client holds now (internal: the refresh token stays inside the library).
    var storedSession: StoredSession? { current }

    // MARK: signing in
    //
    // Each sign-in made while signed in replaces the session: once the new one is open, the old
    // one is ended at the server (best effort) and `states` goes from `signedIn(old user)` to
    // `signedIn(new user)` with no `signedOut` between. A sign-in that fails changes nothing.

    /// An ID token of Google, Apple or a configured OpenID Connect provider. Apple: its
    /// `authorizationCode` (kept by the server to revoke at deletion) and the name Apple gives the
    /// app only once.
    @discardableResult
    public func signIn(provider: String, idToken: String, nonce: String? = nil, authorizationCode: String? = nil,
                       fullName: String? = nil, device: Device? = nil) async throws(AuthClientError) -> User {
        var body: [String: JSON] = ["provider": .string(provider), "idToken": .string(idToken)]
        if let nonce { body["nonce"] = .string(nonce) }
        if let authorizationCode { body["authorizationCode"] = .string(authorizationCode) }
        if let fullName { body["profile"] = .object(["name": .string(fullName)]) }
        return try await signIn(body, device: device)
    }

    /// A new anonymous user, who can link an identity later and keep everything.
    @discardableResult
    public func signInAsGuest(device: Device? = nil) async throws(AuthClientError) -> User {
        try await signIn(["provider": "guest"], device: device)
    }

    /// Sends a one-time code to `email`; returns how many seconds it stays valid.
    @discardableResult
    public func startEmailSignIn(email: String) async throws(AuthClientError) -> Int {
        let answer = try await transport.send("POST", "/auth/otp/start", body: ["email": .string(email)])
        if case .number(let seconds)? = answer["expiresIn"] { return Int(seconds) }
        return 600
    }

    @discardableResult
    public func signInWithEmail(_ email: String, code: String, device: Device? = nil) async throws(AuthClientError) -> User {
        try await signIn(["provider": "email", "email": .string(email), "code": .string(code)], device: device)
    }

    /// The options for the platform's passkey sheet (discoverable credentials): pass them to
    /// ASAuthorizationPlatformPublicKeyCredentialProvider (or the browser) as they are.
    public func passkeySignInOptions() async throws(AuthClientError) -> JSON {
        try await transport.send("POST", "/auth/passkey", body: ["action": "login-options"])
    }

    /// The platform's credential JSON (AuthenticationResponseJSON), passed through.
    @discardableResult
    public func signInWithPasskey(credential: JSON, device: Device? = nil) async throws(AuthClientError) -> User {
        try await signIn(["provider": "passkey", "credential": credential], device: device)
    }

    private func signIn(_ request: [String: JSON], device: Device?) async throws(AuthClientError) -> User {
        var body = request
        if let device {
            var fields: [String: JSON] = [:]
            if let id = device.id { fields["id"] = .string(id) }
            if let name = device.name { fields["name"] = .string(name) }
            if let platform = device.platform { fields["platform"] = .string(platform) }
            body["device"] = .object(fields)
        }
        let answer: JSON
        do {
            answer = try await transport.send("POST", "/auth/signin", body: body)
        } catch where error.mfaChallenge != nil {
            // Kept for `completeSignIn`; a challenge lives 300 s, so only the latest few matter.
            if challengeDevices.count >= 16 { challengeDevices.removeAll() }
            if let token = error.mfaChallenge?.mfaToken { challengeDevices[token] = body["device"]?.objectValue ?? [:] }
            throw error
        }
        return try await open(answer)
    }

    /// A sign-in's answer (or a challenge's): the session kept, the old one replaced.
    private func open(_ answer: JSON) async throws(AuthClientError) -> User {
        let session = try session(from: answer)
        try await takingTurns { try await self.replaceHoldingTheStorage(with: session) }
        broadcaster.publish(.signedIn(session.user))
        return session.user
    }

    /// Ends the session a new sign-in replaces at the server, then keeps the new one. Left alone,
    /// the replaced session would live on at the server, its refresh token good, until it expired
    /// or was evicted. Only once the new sign-in succeeded: one that fails replaces nothing.
    private func replaceHoldingTheStorage(with session: StoredSession) async throws(AuthClientError) {
        // As stored now (another client of the storage may have rotated its refresh token);
        // nothing stored means signed out already.
        let replaced: StoredSession?
        do {
            replaced = try storage.load()
        } catch {
            replaced = current
        }
        if let replaced, replaced.sessionID != session.sessionID {
            // Best effort: the user asked for the new session, and has it whatever this answers.
            _ = try? await endAtServer(replaced, scope: .session)
        }
        try keep(session)
    }

    // MARK: the second factor

    /// Finishes a sign-in that answered `MFA_REQUIRED` (`error.mfaChallenge`) with the code the
    /// authenticator app shows; the session opens at `aal2`.
    @discardableResult
    public func completeSignIn(mfaToken: String, code: String) async throws(AuthClientError) -> User {
        try await completeSignIn(mfaToken: mfaToken, proof: ["code": .string(code)])
    }

    /// The same with one of the recovery codes (each works once), for a user without the phone.
    @discardableResult
    public func completeSignIn(mfaToken: String, recoveryCode: String) async throws(AuthClientError) -> User {
        try await completeSignIn(mfaToken: mfaToken, proof: ["recoveryCode": .string(recoveryCode)])
    }

    private func completeSignIn(mfaToken: String, proof: [String: JSON]) async throws(AuthClientError) -> User {
        var body = proof
        body["action"] = "challenge"
        body["mfaToken"] = .string(mfaToken)
        if let device = challengeDevices[mfaToken], !device.isEmpty { body["device"] = .object(device) }
        let answer = try await transport.send("POST", "/auth/mfa", body: body)
        challengeDevices[mfaToken] = nil
        return try await open(answer)
    }

    /// Starts adding a TOTP factor: its secret and `otpauth://` uri (a QR code for the app).
    public func enrollTOTP() async throws(AuthClientError) -> TOTPEnrollment {
        let answer = try await callerRequest("POST", "/auth/mfa", body: ["action": "totp-enroll"])
        guard let secret = answer["secret"]?.stringValue, let uri = answer["uri"]?.stringValue else {
            throw .invalidResponse("secret and uri are expected")
        }
        return TOTPEnrollment(secret: secret, uri: uri)
    }

    /// Confirms the factor with the app's first code; returns the ten recovery codes, which the
    /// server shows this once: the app must show them to the user now.
    public func confirmTOTP(code: String) async throws(AuthClientError) -> [String] {
        try Self.recoveryCodes(try await callerRequest("POST", "/auth/mfa", body: ["action": "totp-confirm", "code": .string(code)]))
    }

    /// Raises this session to `aal2` with a code (or a recovery code); the new access token is
    /// kept and handed out from now on, and the session's refreshes stay `aal2`.
    public func stepUp(code: String? = nil, recoveryCode: String? = nil) async throws(AuthClientError) {
        var body: [String: JSON] = ["action": "step-up"]
        if let code { body["code"] = .string(code) }
        if let recoveryCode { body["recoveryCode"] = .string(recoveryCode) }
        let answer = try await callerRequest("POST", "/auth/mfa", body: body)
        guard let tokens = answer["tokens"], let accessToken = tokens["accessToken"]?.stringValue,
              case .number(let expiresIn)? = tokens["expiresIn"], let sessionID = answer["session"]?["id"]?.stringValue else {
            throw .invalidResponse("a session and an access token are expected")
        }
        let issued = now()
        try await takingTurns { try await self.keepSteppedUp(sessionID: sessionID, accessToken: accessToken, expiresIn: expiresIn, issued: issued) }
    }

    private func keepSteppedUp(sessionID: String, accessToken: String, expiresIn: Double, issued: Date) throws(AuthClientError) {
        let stored: StoredSession?
        do {
            stored = try storage.load()
        } catch {
            throw .storage(error)
        }
        // The session as stored now (its refresh token may have rotated meanwhile); another
        // session, or none: signed in again or out elsewhere, and this token is not theirs.
        guard var session = stored ?? current, session.sessionID == sessionID else { return }
        session.accessToken = accessToken
        session.accessTokenExpiresAt = issued.addingTimeInterval(expiresIn)
        session.accessTokenLifetime = expiresIn
        try keep(session)
    }

    public func mfaStatus() async throws(AuthClientError) -> MFAStatus {
        let answer = try await callerRequest("POST", "/auth/mfa", body: ["action": "status"])
        guard case .bool(let totp)? = answer["totp"], case .number(let left)? = answer["recoveryCodesLeft"] else {
            throw .invalidResponse("totp and recoveryCodesLeft are expected")
        }
        return MFAStatus(totp: totp, recoveryCodesLeft: Int(left))
    }

    /// Ten new recovery codes; the old ones stop working (needs an `aal2` session: `stepUp` first).
    public func newRecoveryCodes() async throws(AuthClientError) -> [String] {
        try Self.recoveryCodes(try await callerRequest("POST", "/auth/mfa", body: ["action": "recovery-codes"]))
    }

    /// Removes the factor and its recovery codes (needs an `aal2` session: `stepUp` first).
    public func removeTOTP() async throws(AuthClientError) {
        _ = try await callerRequest("POST", "/auth/mfa", body: ["action": "totp-remove"])
    }

    private static func recoveryCodes(_ answer: JSON) throws(AuthClientError) -> [String] {
        guard case .array(let codes)? = answer["recoveryCodes"] else { throw .invalidResponse("recoveryCodes are expected") }
        return codes.compactMap(\.stringValue)
    }

    // MARK: tokens

    /// An access token valid for at least `minimumValidity` more seconds (a quarter of its
    /// lifetime when that is shorter), refreshed when needed.
    public func validAccessToken() async throws(AuthClientError) -> String {
        guard let current else { throw .notSignedIn }
        if isFresh(current) { return current.accessToken }
        return try await refreshed().accessToken
    }

    /// Adds `Authorization: Bearer <access token>` to a request of the app's own API.
    public func authorize(_ request: inout URLRequest) async throws(AuthClientError) {
        request.setValue("Bearer \(try await validAccessToken())", forHTTPHeaderField: "Authorization")
    }

    /// Temporary AWS credentials for the user (their own S3 prefix), refreshed with the tokens.
    public func credentials() async throws(AuthClientError) -> AWSCredentials {
        guard let current else { throw .notSignedIn }
        if let credentials = current.credentials, let expiry = credentials.expiresAt,
           expiry.timeIntervalSince(now()) >= Self.minimumValidity {
            return credentials
        }
        guard let credentials = try await refreshed().credentials else { throw .invalidResponse("no credentials") }
        return credentials
    }

    /// Refreshes now (whatever the access token's age), sharing a refresh already in flight.
    @discardableResult
    public func refresh() async throws(AuthClientError) -> String {
        try await refreshed().accessToken
    }

    private func refreshed() async throws(AuthClientError) -> StoredSession {
        if let refreshing { return try await Self.result(of: refreshing) }
        let task = Task { try await self.refreshTakingTurns() }
        refreshing = task
        defer { refreshing = nil }
        return try await Self.result(of: task)
    }

    private static func result(of task: Task<StoredSession, any Error>) async throws(AuthClientError) -> StoredSession {
        do {
            return try await task.value
        } catch let error as AuthClientError {
            throw error
        } catch {
            throw .storage(error)
        }
    }

    /// One refresh at a time among every client of the storage (processes too).
    private func refreshTakingTurns() async throws -> StoredSession {
        try await takingTurns { try await self.refreshHoldingTheStorage() }
    }

    private func refreshHoldingTheStorage() async throws(AuthClientError) -> StoredSession {
        let latest: StoredSession?
        do {
            latest = try storage.load()
        } catch {
            throw .storage(error)
        }
        guard let latest else {
            // Signed out by another client of the storage.
            forget()
            throw .notSignedIn
        }
        if latest != current {
            // Another process refreshed while this one waited: its token is the live one.
            current = latest
            if isFresh(latest) { return latest }
        }
        var answer: JSON = .null
        for attempt in 0..<retryPolicy.attempts {
            do {
                answer = try await transport.send("POST", "/auth/refresh", body: ["refreshToken": .string(latest.refreshToken)])
                break
            } catch where error.endsTheSession {
                forget()
                throw error
            } catch where error.retryable && attempt + 1 < retryPolicy.attempts {
                try? await Task.sleep(nanoseconds: UInt64(retryPolicy.delay(beforeRetry: attempt) * 1_000_000_000))
            }
        }
        let next = try session(from: answer)
        // Stored before anyone sees the new access token: a crash after this point loses
        // nothing, and one before it leaves the replaced token, which within the server's grace
        // period answers this same live token again.
        try keep(next)
        broadcaster.publish(.tokenRefreshed)
        if next.user != latest.user { broadcaster.publish(.userUpdated(next.user)) }
        return next
    }

    // MARK: the signed-in user's requests

    /// Links another identity (an ID token of `provider`) to the signed-in user.
    @discardableResult
    public func link(provider: String, idToken: String, nonce: String? = nil) async throws(AuthClientError) -> User {
        var body: [String: JSON] = ["provider": .string(provider), "idToken": .string(idToken)]
        if let nonce { body["nonce"] = .string(nonce) }
        return try await updateUser(try await callerRequest("POST", "/auth/link", body: body))
    }

    @discardableResult
    public func unlink(provider: String) async throws(AuthClientError) -> User {
        try await updateUser(try await callerRequest("DELETE", "/auth/link", body: ["provider": .string(provider)]))
    }

    public func sessions() async throws(AuthClientError) -> [SessionInfo] {
        try await callerRequest("GET", "/auth/sessions").decoded([SessionInfo].self, at: "sessions")
    }

    public func revokeSession(id: String) async throws(AuthClientError) {
        _ = try await callerRequest("DELETE", "/auth/sessions", body: ["sessionId": .string(id)])
    }

    /// Ends `scope` at the server, then locally whatever the server answered (a user who taps
    /// "Sign out" is signed out on this device). Returns how many sessions the server ended.
    @discardableResult
    public func signOut(scope: SignOutScope = .session) async throws(AuthClientError) -> Int {
        guard current != nil else { return 0 }
        do {
            return try await takingTurns { try await self.signOutHoldingTheStorage(scope: scope) }
        } catch {
            forget(clearingStorage: false)
            throw error
        }
    }

    private func signOutHoldingTheStorage(scope: SignOutScope) async throws(AuthClientError) -> Int {
        // The refresh token stored now: another client of the storage may have rotated the one
        // this client loaded, and the server would take a replaced token for a stolen one.
        let stored = (try? storage.load()) ?? nil
        guard let session = stored?.sessionID == current?.sessionID ? stored : current else { return 0 }
        defer { forget() }
        return try await endAtServer(session, scope: scope)
    }

    /// Returns how many sessions the server ended.
    private func endAtServer(_ session: StoredSession, scope: SignOutScope) async throws(AuthClientError) -> Int {
        // The refresh token alone: it works even when the access token has expired.
        let answer = try await transport.send("POST", "/auth/signout",
                                              body: ["refreshToken": .string(session.refreshToken), "scope": .string(scope.rawValue)])
        if case .number(let count)? = answer["revokedSessions"] { return Int(count) }
        return 0
    }

    /// Deletes the account. `proof`: a fresh proof of one of the user's identities when the
    /// session is older than the server's re-authentication window, e.g.
    /// `["provider": "google", "idToken": .string(token)]`.
    public func deleteAccount(proof: [String: JSON]? = nil) async throws(AuthClientError) {
        _ = try await callerRequest("DELETE", "/auth/account", body: proof ?? [:])
        do {
            try await takingTurns { await self.forget() }
        } catch {
            forget(clearingStorage: false)
        }
    }

    /// Registration options for a new passkey of the signed-in user, for the platform's sheet.
    public func passkeyRegistrationOptions() async throws(AuthClientError) -> JSON {
        try await callerRequest("POST", "/auth/passkey", body: ["action": "register-options"])
    }

    /// The platform's RegistrationResponseJSON, passed through (`ASAuthorizationPlatformPublicKeyCredentialRegistration`
    /// turned into its JSON form, or a browser's `credential.toJSON()`); returns the new passkey.
    @discardableResult
    public func registerPasskey(credential: JSON, name: String? = nil) async throws(AuthClientError) -> Passkey {
        var body: [String: JSON] = ["action": "register", "credential": credential]
        if let name { body["name"] = .string(name) }
        let answer = try await callerRequest("POST", "/auth/passkey", body: body)
        // The passkey is one more identity of the user: `user.identities` shows it from the next
        // refresh on (the answer carries the passkey alone).
        return try answer.decoded(Passkey.self, at: "passkey")
    }

    /// The signed-in user's passkeys (at most 10).
    public func passkeys() async throws(AuthClientError) -> [Passkey] {
        try await callerRequest("POST", "/auth/passkey", body: ["action": "list"]).decoded([Passkey].self, at: "passkeys")
    }

    /// Deletes one of the user's passkeys; nothing else (no session) is revoked.
    public func deletePasskey(id: String) async throws(AuthClientError) {
        _ = try await callerRequest("POST", "/auth/passkey", body: ["action": "delete", "passkeyId": .string(id)])
    }

    private func callerRequest(_ method: String, _ path: String, body: [String: JSON]? = nil) async throws(AuthClientError) -> JSON {
        let token = try await validAccessToken()
        do {
            return try await transport.send(method, path, body: body, bearer: token)
        } catch where error.code == "ACCESS_TOKEN_INVALID" || error.code == "ACCESS_TOKEN_REVOKED" {
            // Refused though the client holds it valid: signed out elsewhere (another device's
            // global sign-out, a reuse detection: ACCESS_TOKEN_REVOKED), or a token the server no
            // longer takes (its key rotated, a clock far off). A refresh tells which: it throws and signs this client out
            // when the session is over; otherwise the call is made once more, with the new token
            // (the refused one did nothing at the server), and its answer is the app's.
            let fresh = try await refreshed()
            return try await transport.send(method, path, body: body, bearer: fresh.accessToken)
        }
    }

    private func updateUser(_ answer: JSON) async throws(AuthClientError) -> User {
        let user = try answer.decoded(User.self, at: "user")
        try await takingTurns { try await self.updateUserHoldingTheStorage(user) }
        return user
    }

    private func updateUserHoldingTheStorage(_ user: User) throws(AuthClientError) {
        let stored: StoredSession?
        do {
            stored = try storage.load()
        } catch {
            throw .storage(error)
        }
        // The session as stored now, not `current`: writing `current` back would put a refresh
        // token that another client of the storage has since rotated in place of its new one.
        // Nothing stored, or another session: signed out or in again elsewhere, nothing to update.
        guard var session = stored, session.sessionID == current?.sessionID, session.user != user else { return }
        session.user = user
        try keep(session)
        broadcaster.publish(.userUpdated(user))
    }

    // MARK: state

    private func session(from answer: JSON) throws(AuthClientError) -> StoredSession {
        let user = try answer.decoded(User.self, at: "user")
        guard let session = answer["session"], let sessionID = session["id"]?.stringValue,
              let tokens = answer["tokens"], let accessToken = tokens["accessToken"]?.stringValue,
              let refreshToken = tokens["refreshToken"]?.stringValue,
              case .number(let expiresIn)? = tokens["expiresIn"], case .number(let refreshExpiresIn)? = tokens["refreshTokenExpiresIn"]
        else { throw .invalidResponse("a session, tokens and their lifetimes are expected") }
        let credentials = answer["credentials"] == nil ? nil : try answer.decoded(AWSCredentials.self, at: "credentials")
        let issued = now()
        return StoredSession(user: user, sessionID: sessionID, accessToken: accessToken,
                             accessTokenExpiresAt: issued.addingTimeInterval(expiresIn), accessTokenLifetime: expiresIn, refreshToken: refreshToken,
                             refreshTokenExpiresAt: issued.addingTimeInterval(refreshExpiresIn), credentials: credentials)
    }

    /// Runs `body` in this client's turn at the storage. Every write takes its turn, not only a
    /// refresh's: a sign-in, link or sign-out written between another client's load and save
    /// (an app and its widget sharing one file) would undo that client's rotation, or be undone.
    private func takingTurns<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws(AuthClientError) -> T {
        do {
            return try await storage.exclusively(body)
        } catch let error as AuthClientError {
            throw error
        } catch {
            throw .storage(error)
        }
    }

    /// Only in the storage's turn (`takingTurns`).
    private func keep(_ session: StoredSession) throws(AuthClientError) {
        do {
            try storage.save(session)
        } catch {
            throw .storage(error)
        }
        current = session
    }

    /// Only in the storage's turn, unless `clearingStorage` is false: the turn could not be had
    /// (its lock failed), and the user who asked to be signed out is, here at least.
    private func forget(clearingStorage: Bool = true) {
        let wasSignedIn = current != nil
        current = nil
        if clearingStorage { try? storage.save(nil) }
        if wasSignedIn { broadcaster.publish(.signedOut) }
    }
}
