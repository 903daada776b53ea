import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import LambdaAuthVerifier
import Synchronization
import Testing

/// `AccessTokenVerifier`'s revocation feed (contract section 20) against a loopback issuer whose
/// list the test changes: freshness (one fetch per maximum age), sharing (concurrent verifications
/// wait for one fetch), the last good list through an outage for 60 s, then refusal.
@Suite struct RevocationFeedTests {
    static let issuer = AccessTokenVerifierTests.issuer
    static let audience = AccessTokenVerifierTests.audience
    let key = AccessTokenKey.generate(.rs256)
    let clock = SettableClock(1_800_000_000)
    /// What the issuer lists now; nil: the feed answers 503.
    let listed = Shared<RevocationList?>(RevocationList(issuedAt: 0))
    let feedDelay = Shared(0.0)

    func server() throws -> LoopbackHTTPServer {
        let keys = AccessTokenKeySet([key]), listed = self.listed, clock = self.clock, feedDelay = self.feedDelay
        let issuer = AccessTokenIssuer(keys: keys, issuer: Self.issuer, audience: Self.audience, lifetime: 900)
        return try LoopbackHTTPServer { request in
            switch request.path {
            case "/.well-known/jwks.json": return AccessTokenVerifierTests.wellKnown(keys)
            case "/.well-known/revocations":
                guard var list = listed.withLock({ $0 }) else { return LoopbackHTTPServer.Response(status: 503) }
                list.issuedAt = clock.nowSeconds
                let document = (try? issuer.sign(list: list)) ?? ""
                var response = LoopbackHTTPServer.Response(headers: [("content-type", "application/jwt"), ("cache-control", "public, max-age=5")],
                                                           body: Array(document.utf8))
                response.delaySeconds = feedDelay.withLock { $0 }
                return response
            default: return LoopbackHTTPServer.Response(status: 404)
            }
        }
    }

    func verifier(_ server: LoopbackHTTPServer, feed: Bool = true) throws -> AccessTokenVerifier {
        try AccessTokenVerifier(jwksURL: server.baseURL + "/.well-known/jwks.json", issuer: Self.issuer, audiences: [Self.audience],
                                revocations: feed ? RevocationFeedSettings(url: server.baseURL + "/.well-known/revocations") : nil,
                                httpClient: CurlHTTPClient(), clock: clock)
    }

    func token(_ server: LoopbackHTTPServer, user: String = "u-1", session: String = "s-1") throws -> String {
        try AccessTokenIssuer(keys: AccessTokenKeySet([key]), issuer: Self.issuer, audience: Self.audience, lifetime: 900)
            .issue(userID: user, sessionID: session, now: clock.nowSeconds, random: SystemRandomSource())
    }

    func code(_ verifier: AccessTokenVerifier, _ token: String) -> ErrorCode? {
        AccessTokenVerifierTests.code(verifier, token)
    }

    func revoke(sessions: Set<String> = [], users: Set<String> = []) {
        listed.withLock { $0 = RevocationList(sessionIDs: sessions, userIDs: users, issuedAt: 0) }
    }

    @Test func aRevokedSessionIsRefusedOnceTheMaximumAgePassesAndNoSooner() throws {
        let server = try self.server()
        let verifier = try self.verifier(server)
        let token = try self.token(server), other = try self.token(server, user: "u-2", session: "s-2")
        #expect(code(verifier, token) == nil)
        #expect(verifier.revocationFetches == 1)
        revoke(sessions: ["s-1"])
        clock.advance(4.9)
        #expect(code(verifier, token) == nil, "within the maximum age the fetched list serves")
        #expect(verifier.revocationFetches == 1)
        clock.advance(0.1)
        #expect(code(verifier, token) == .accessTokenRevoked)
        #expect(code(verifier, other) == nil)
        #expect(verifier.revocationFetches == 2)
        // A deleted user: every session of theirs.
        revoke(users: ["u-2"])
        clock.advance(5)
        #expect(code(verifier, other) == .accessTokenRevoked)
        #expect(code(verifier, try self.token(server, user: "u-2", session: "s-9")) == .accessTokenRevoked)
        // Without a feed, the same token passes: the feed is what ends it.
        #expect(code(try self.verifier(server, feed: false), other) == nil)
    }

    @Test func concurrentVerificationsShareOneFetch() throws {
        let server = try self.server()
        let verifier = try self.verifier(server)
        let token = try self.token(server)
        #expect(code(verifier, token) == nil)
        clock.advance(5)
        feedDelay.withLock { $0 = 0.3 }
        let codes = runSimultaneously(16) { _ in code(verifier, token) }
        #expect(codes.allSatisfy { $0 == nil })
        #expect(verifier.revocationFetches == 2, "one fetch for 16 concurrent verifications of a stale list")
    }

    @Test func theLastGoodListServesSixtySecondsThenTokensAreRefused() throws {
        let server = try self.server()
        let verifier = try self.verifier(server)
        let token = try self.token(server), revoked = try self.token(server, session: "s-gone")
        revoke(sessions: ["s-gone"])
        #expect(code(verifier, token) == nil)
        listed.withLock { $0 = nil }
        clock.advance(30)
        #expect(code(verifier, token) == nil, "the last good list serves through the outage")
        #expect(code(verifier, revoked) == .accessTokenRevoked, "and still refuses what it lists")
        let attempts = verifier.revocationFetches
        #expect(code(verifier, token) == nil)
        #expect(verifier.revocationFetches == attempts, "a failed fetch is not retried before the maximum age")
        clock.advance(30)
        #expect(code(verifier, token) == .jwksUnavailable, "60 s past its fetch the last good list is no longer good")
        revoke()
        clock.advance(5)
        #expect(code(verifier, token) == nil, "the feed back: tokens pass again")
    }

    @Test func aListThatDoesNotVerifyIsAFailedFetch() throws {
        let stranger = AccessTokenKey.generate(.rs256)
        let keys = AccessTokenKeySet([key])
        let clock = self.clock
        let server = try LoopbackHTTPServer { request in
            if request.path == "/.well-known/jwks.json" { return AccessTokenVerifierTests.wellKnown(keys) }
            let forged = try? AccessTokenIssuer(keys: AccessTokenKeySet([stranger]), issuer: "x", audience: "x", lifetime: 1)
                .sign(list: RevocationList(issuedAt: clock.nowSeconds))
            return LoopbackHTTPServer.Response(body: Array((forged ?? "").utf8))
        }
        let verifier = try self.verifier(server)
        #expect(code(verifier, try self.token(server)) == .jwksUnavailable, "no good list ever: refused")
        // An access token is not a list either (typ), even one of ours.
        #expect(throws: AuthError.self) {
            try RevocationDocument.parse(try self.token(server), issuer: Self.issuer, now: clock.nowSeconds) { _ in nil }
        }
    }
}

/// A value the test and the loopback server's threads share.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
}
