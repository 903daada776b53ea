import Crypto
import LambdaAuth
import Synchronization

/// A loopback stand-in for Apple's token and revocation endpoints (Sign in with Apple REST API),
/// so the code exchange and revocation run offline. It checks each `client_secret` as Apple
/// does (ES256 signature under the team's public key, `kid`, `iss` = team id, `aud`, `sub` =
/// `client_id`, not expired, at most six months long) and answers 400 `{"error":
/// "invalid_client"}` otherwise; it exchanges only codes it minted, once, for an ID token signed
/// by the dev identity provider's key and a refresh token; it records every revocation.
public final class DevAppleServer: Sendable {
    /// The team key Apple would hold for the client secrets it accepts.
    public struct Team: Sendable {
        public var teamID: String
        public var keyID: String
        public var publicKey: P256.Signing.PublicKey

        public init(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
        }
    }

    public struct Revocation: Sendable, Equatable {
        public var clientID: String
        public var token: String
        public var tokenTypeHint: String?

        public init(clientID: String, token: String, tokenTypeHint: String?) {
            self.clientID = clientID
            self.token = token
            self.tokenTypeHint = tokenTypeHint
        }
    }

    /// Apple's limit on a client secret's lifetime.
    public static let maximumSecretLifetime: Int64 = 15_777_000
    public static let audience = "https://appleid.apple.com"

    private struct MintedCode {
        var subject: String
        var clientID: String
        var email: String?
        var used = false
    }

    private struct State {
        var codes: [String: MintedCode] = [:]
        var issuedRefreshTokens: [String] = []
        var revocations: [Revocation] = []
        var unavailable = false
        var counter = 0
    }

    let team: Team
    let identityProvider: DevIdentityProvider
    let clock: any WallClock
    private let state = Mutex(State())
    private let server: LoopbackHTTPServer

    public init(team: Team, identityProvider: DevIdentityProvider, clock: any WallClock = SystemClock()) throws {
        self.team = team
        self.identityProvider = identityProvider
        self.clock = clock
        server = try LoopbackHTTPServer { _ in .drop }
        server.respond { [self] request in answer(request) }
    }

    public var tokenURL: String { server.baseURL + "/auth/token" }
    public var revokeURL: String { server.baseURL + "/auth/revoke" }

    /// What the handlers need to talk to this server instead of Apple.
    public var environment: [String: String] { ["AUTH_APPLE_TOKEN_URL": tokenURL, "AUTH_APPLE_REVOKE_URL": revokeURL] }

    /// An authorization code for `subject`, as Apple hands one to the app with the ID token.
    public func mintCode(subject: String, clientID: String, email: String? = nil) -> String {
        state.withLock { state in
            state.counter += 1
            let code = "dev-apple-code-\(state.counter)-\(Base64.urlEncoded(SystemRandomSource().bytes(12)))"
            state.codes[code] = MintedCode(subject: subject, clientID: clientID, email: email)
            return code
        }
    }

    public var revocations: [Revocation] { state.withLock { $0.revocations } }
    /// Every client_secret received, for tests that prove none of them reached a log.
    public var receivedClientSecrets: [String] {
        server.requests.compactMap { FormEncoding.decode($0.bodyText)?["client_secret"] }
    }
    public var issuedRefreshTokens: [String] { state.withLock { $0.issuedRefreshTokens } }

    /// While true, every request is answered 503, as Apple failing would be.
    public func setUnavailable(_ unavailable: Bool) { state.withLock { $0.unavailable = unavailable } }

    public func stop() { server.stop() }

    func answer(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
        if state.withLock({ $0.unavailable }) { return LoopbackHTTPServer.Response(status: 503, text: "unavailable") }
        guard request.method == "POST" else { return DevAppleServer.error("invalid_request", status: 405) }
        guard let form = FormEncoding.decode(request.bodyText) else { return DevAppleServer.error("invalid_request") }
        guard let clientID = form["client_id"], let secret = form["client_secret"] else { return DevAppleServer.error("invalid_request") }
        guard clientSecretAccepted(secret, clientID: clientID) else { return DevAppleServer.error("invalid_client") }
        switch request.path {
        case "/auth/token": return exchange(form, clientID: clientID)
        case "/auth/revoke":
            guard let token = form["token"] else { return DevAppleServer.error("invalid_request") }
            state.withLock { $0.revocations.append(Revocation(clientID: clientID, token: token, tokenTypeHint: form["token_type_hint"])) }
            return LoopbackHTTPServer.Response(status: 200)
        default: return LoopbackHTTPServer.Response(status: 404, text: "not found")
        }
    }

    /// Apple's checks of a client secret; any failure is invalid_client, as Apple says no more.
    func clientSecretAccepted(_ secret: String, clientID: String) -> Bool {
        guard let parsed = try? JSONWebToken(parsing: secret), (try? parsed.jws.checkAlgorithm(allowed: [.es256])) != nil,
              parsed.jws.keyID == team.keyID,
              (try? parsed.jws.verifySignature(with: JSONWebKey(keyID: team.keyID, material: .p256(team.publicKey)))) != nil
        else { return false }
        let claims = parsed.claims
        let now = clock.nowSeconds
        guard claims["iss"]?.stringValue == team.teamID, claims["aud"]?.stringValue == DevAppleServer.audience,
              claims["sub"]?.stringValue == clientID,
              let issuedAt = claims["iat"]?.int64Value, let expiresAt = claims["exp"]?.int64Value,
              issuedAt <= now + 60, expiresAt > now, expiresAt - issuedAt <= DevAppleServer.maximumSecretLifetime
        else { return false }
        return true
    }

    func exchange(_ form: [String: String], clientID: String) -> LoopbackHTTPServer.Response {
        guard form["grant_type"] == "authorization_code" else { return DevAppleServer.error("unsupported_grant_type") }
        let minted: MintedCode? = state.withLock { state in
            guard let code = form["code"], let minted = state.codes[code], !minted.used, minted.clientID == clientID else { return nil }
            state.codes[code]?.used = true
            return minted
        }
        guard let minted else { return DevAppleServer.error("invalid_grant") }
        var options = DevTokenOptions(subject: minted.subject, audience: clientID)
        options.email = minted.email
        let refreshToken = "dev-apple-refresh." + Base64.urlEncoded(SystemRandomSource().bytes(32))
        guard let idToken = try? identityProvider.token(claims: options.claims(for: .apple, now: clock.nowSeconds), provider: .apple) else {
            return LoopbackHTTPServer.Response(status: 500, text: "cannot sign")
        }
        state.withLock { $0.issuedRefreshTokens.append(refreshToken) }
        return .json(["access_token": .string("dev-apple-access." + Base64.urlEncoded(SystemRandomSource().bytes(16))),
                      "token_type": "Bearer", "expires_in": 3600, "refresh_token": .string(refreshToken), "id_token": .string(idToken)])
    }

    static func error(_ name: String, status: Int = 400) -> LoopbackHTTPServer.Response {
        .json(["error": .string(name)], status: status)
    }
}
