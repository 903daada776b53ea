import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The promise of contract section 20, end to end with the clock real: sessions signed in through
/// `authctl serve` with the `lambda` authorizer, calls to a protected route through it and token
/// checks through `AccessTokenVerifier` with the feed (as an app's service would make them), each
/// kind of revocation, and the calls made 5 s later refused; the calls before accepted with no
/// table read per request.
// Immutable after init; the load test shares it with its client threads.
@Suite(.serialized) final class ServeRevocationTests: @unchecked Sendable {
    let directory = TestSupport.temporaryDirectory("serve-revocation")
    let identityProvider: DevIdentityProvider
    let signingKey = AccessTokenKey.generate(.rs256)
    let api: LocalHTTPAPI
    let listener: ServeListener
    let http = CurlHTTPClient()

    convenience init() throws { try self.init(backend: .local) }

    /// Serve on `backend`: the local store in the test's directory, or a table of its own on moto_server.
    init(backend: FlowWorld.Backend) throws {
        identityProvider = try DevIdentityProvider.initialize(directory: directory + "/dev").provider
        var environment = ServeTests.environment(directory, signingKeys: signingKey.pemRepresentation)
            .merging(["AUTH_MAX_SESSIONS": "2", "AUTH_REFRESH_GRACE": "0"]) { $1 }
        if backend == .dynamoDB {
            let server = try MotoServer.shared()
            environment.merge(server.environment(table: try server.makeTable(prefix: "serve-revocation").tableName)) { $1 }
        }
        api = try LocalHTTPAPI(environment: environment, authorizer: .lambda, logSink: { _ in })
        let api = self.api
        listener = try ServeListener(host: "127.0.0.1", port: 0) { api.respond($0) }
    }

    deinit {
        listener.stop(timeoutSeconds: 5)
        TestSupport.removeTree(directory)
    }

    var base: String { "http://127.0.0.1:\(listener.port)" }

    func send(_ method: String, _ path: String, json: JSONValue? = nil, bearer: String? = nil) throws -> (status: Int, body: JSONValue?) {
        var headers: [(name: String, value: String)] = []
        if json != nil { headers.append(("content-type", "application/json")) }
        if let bearer { headers.append(("authorization", "Bearer " + bearer)) }
        let response = try http.send(HTTPRequest(method: method, url: base + path, headers: headers, body: json?.serializedBytes() ?? [], timeout: 20))
        return (response.status, try? JSONValue.parse(response.body))
    }

    struct Session {
        var userID: String
        var sessionID: String
        var accessToken: String
        var refreshToken: String
    }

    func signIn(_ provider: ProviderName = .google, sub: String) throws -> Session {
        let claims = DevTokenOptions(subject: sub, audience: provider == .apple ? "com.example.app" : "web-client")
            .claims(for: provider, now: SystemClock().nowSeconds)
        let idToken = try identityProvider.token(claims: claims, provider: provider)
        let (status, body) = try send("POST", "/auth/signin", json: ["provider": .string(provider.rawValue), "idToken": .string(idToken)])
        try #require(status == 200, "\(body?.serialized() ?? "")")
        return Session(userID: try #require(body?["user"]?["id"]?.stringValue), sessionID: try #require(body?["session"]?["id"]?.stringValue),
                       accessToken: try #require(body?["tokens"]?["accessToken"]?.stringValue),
                       refreshToken: try #require(body?["tokens"]?["refreshToken"]?.stringValue))
    }

    func verifier() throws -> AccessTokenVerifier {
        try AccessTokenVerifier(jwksURL: base + "/.well-known/jwks.json", issuer: "lambda-auth",
                                revocations: RevocationFeedSettings(url: base + "/.well-known/revocations"), httpClient: CurlHTTPClient())
    }

    func verdict(_ verifier: AccessTokenVerifier, _ token: String) -> String {
        do {
            _ = try verifier.verify(token)
            return "ok"
        } catch {
            return error.code.rawValue
        }
    }

    func appleNotification(type: String, sub: String) throws -> String {
        let now = SystemClock().nowSeconds
        let event: JSONValue = ["type": .string(type), "sub": .string(sub), "event_time": .number(now * 1000)]
        return try identityProvider.token(claims: ["iss": "https://appleid.apple.com", "aud": "com.example.app", "iat": .number(now),
                                                   "exp": .number(now + 3600), "jti": .string("n-\(sub)"), "events": .string(event.serialized())],
                                          provider: .apple)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func eachRevocationKindEndsItsAccessTokensWithinFiveSeconds(backend: FlowWorld.Backend) throws {
        // Swift Testing made this instance on the local store; the test's own serve is on `backend`.
        try ServeRevocationTests(backend: backend).revokeEachKindAndWaitFiveSeconds()
    }

    func revokeEachKindAndWaitFiveSeconds() throws {
        let signedOut = try signIn(sub: "signout")
        let revokedBy = try signIn(sub: "revoke"), revoked = try signIn(sub: "revoke")
        let evicted = try signIn(sub: "evict")
        let reused = try signIn(sub: "reuse")
        let deleted = try signIn(sub: "delete")
        let consent = try signIn(.apple, sub: "000111.consent.1")
        let bystander = try signIn(sub: "bystander")
        let victims = ["signout": signedOut, "revoke": revoked, "eviction": evicted, "reuse": reused, "deletion": deleted,
                       "apple consent-revoked": consent]
        let verifier = try self.verifier()

        // Before: every call accepted, with no table read per request.
        let readsBefore = api.authorizerTableReads ?? -1
        let started = SystemClock().now()
        for _ in 0..<3 {
            for (kind, session) in victims {
                let call = try send("GET", "/example/whoami", bearer: session.accessToken)
                #expect(call.status == 200 && call.body?["sessionId"] == .string(session.sessionID), "\(kind) before: \(call)")
                #expect(verdict(verifier, session.accessToken) == "ok", "\(kind) before")
            }
        }
        let windows = Int((SystemClock().now() - started) / 5) + 1
        #expect((api.authorizerTableReads ?? 99) - readsBefore <= windows, "18 authorizations read the table at most once per 5 s")
        #expect(verifier.revocationFetches <= windows + 1, "18 verifications fetched the list at most once per 5 s")

        // Each kind of revocation.
        #expect(try send("POST", "/auth/signout", json: ["refreshToken": .string(signedOut.refreshToken)]).body == ["revokedSessions": 1])
        #expect(try send("DELETE", "/auth/sessions", json: ["sessionId": .string(revoked.sessionID)], bearer: revokedBy.accessToken).status == 200)
        _ = try signIn(sub: "evict")
        _ = try signIn(sub: "evict")
        #expect(try send("POST", "/auth/refresh", json: ["refreshToken": .string(reused.refreshToken)]).status == 200)
        #expect(try send("POST", "/auth/refresh", json: ["refreshToken": .string(reused.refreshToken)]).body?["error"]?["code"] == "REFRESH_TOKEN_REUSED")
        #expect(try send("DELETE", "/auth/account", bearer: deleted.accessToken).body?["deleted"] == true)
        let notified = try send("POST", "/auth/apple/notifications", json: ["payload": .string(try appleNotification(type: "consent-revoked", sub: "000111.consent.1"))])
        #expect(notified.body == ["handled": "consent-revoked"], "\(notified)")
        let answered = SystemClock().now()

        // 5 s after the last answer: refused by the authorizer (403, as API Gateway answers a
        // simple response's false) and by the verifier; the bystander still passes both.
        let wait = answered + 5 - SystemClock().now()
        if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
        for (kind, session) in victims {
            #expect(try send("GET", "/example/whoami", bearer: session.accessToken).status == 403, "\(kind) after 5 s")
            #expect(verdict(verifier, session.accessToken) == "ACCESS_TOKEN_REVOKED", "\(kind) after 5 s")
        }
        #expect(try send("GET", "/example/whoami", bearer: bystander.accessToken).status == 200)
        #expect(verdict(verifier, bystander.accessToken) == "ok")
        // A guarded route of ours refuses at once, and says why.
        #expect(try send("GET", "/auth/sessions", bearer: revokedBy.accessToken).status == 200)
    }

    /// The feed read by a client nobody here wrote: PyJWT verifies its signature through our JWKS.
    @Test func pyJWTVerifiesTheFeedThroughOurJWKS() throws {
        let session = try signIn(sub: "feed-reader")
        #expect(try send("POST", "/auth/signout", json: ["refreshToken": .string(session.refreshToken)]).status == 200)
        let read = try TestSupport.pythonPeer("revocation_feed.py", [base, "lambda-auth"])
        #expect(read["error"] == nil, "\(read.serialized())")
        #expect(read["contentType"] == "application/jwt" && read["cacheControl"] == "public, max-age=5")
        #expect(read["typ"] == "revocations+jwt" && read["kid"] == .string(signingKey.keyID))
        #expect(read["sids"] == [.string(session.sessionID)] && read["subs"] == [])
        #expect(read["exp"]?.int64Value == read["iat"]?.int64Value.map { $0 + 60 })
    }

    /// 16 clients calling the authorizer through serve while sessions are revoked: every call
    /// made 5 s after a revocation answered is refused, and none made before it was asked.
    @Test func underLoadNoCallAfterTheFiveSecondsIsAcceptedAndNoneBeforeIsRefused() throws {
        let clients = 16
        let sessions = try (0..<clients).map { try signIn(sub: "load-\($0)") }
        // When each client's session was asked to end, and when that answered (nil: not yet).
        let revocations = Mutex<[Int: (asked: Double, answered: Double)]>([:])
        let deadline = SystemClock().now() + 12
        struct Call { var started: Double; var status: Int }
        let calls = runSimultaneously(clients + 1) { index -> [Call] in
            if index == clients {
                // The revoker: a client's session every 0.5 s, from the second second on.
                usleep(1_000_000)
                for victim in stride(from: 0, to: clients, by: 2) {
                    let asked = SystemClock().now()
                    _ = try? self.send("POST", "/auth/signout", json: ["refreshToken": .string(sessions[victim].refreshToken)])
                    revocations.withLock { $0[victim] = (asked, SystemClock().now()) }
                    usleep(500_000)
                }
                return []
            }
            var made: [Call] = []
            while SystemClock().now() < deadline {
                let started = SystemClock().now()
                let status = (try? self.send("GET", "/example/whoami", bearer: sessions[index].accessToken).status) ?? -1
                made.append(Call(started: started, status: status))
            }
            return made
        }
        let ended = revocations.withLock { $0 }
        #expect(ended.count == clients / 2)
        var refusedAfter = 0
        for (index, made) in calls.prefix(clients).enumerated() {
            #expect(made.count > 10, "client \(index) made \(made.count) calls")
            for call in made {
                if let revocation = ended[index] {
                    if call.started >= revocation.answered + 5 {
                        #expect(call.status == 403, "client \(index): a call \(call.started - revocation.answered) s after the sign-out answered")
                        refusedAfter += 1
                    } else if call.started < revocation.asked {
                        #expect(call.status == 200, "client \(index): a call before the sign-out was refused")
                    }
                } else {
                    #expect(call.status == 200, "client \(index) was never signed out")
                }
            }
        }
        #expect(refusedAfter > 0)
    }
}
