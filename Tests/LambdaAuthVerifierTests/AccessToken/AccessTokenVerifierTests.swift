import Crypto
import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import LambdaAuthVerifier
import Synchronization
import Testing

/// A clock the test moves (the cache's freshness and refetch cooldown are measured on it).
final class SettableClock: WallClock {
    private let instant: Mutex<Double>
    init(_ instant: Double) { self.instant = Mutex(instant) }
    func now() -> Double { instant.withLock { $0 } }
    func advance(_ seconds: Double) { instant.withLock { $0 += seconds } }
}

/// Another service verifying our access tokens against a loopback copy of `well-known`'s JWKS.
@Suite struct AccessTokenVerifierTests {
    static let issuer = "https://auth.example.test"
    static let audience = "https://api.example.test"
    /// Mixed, as after a rotation from ES256 to RS256 (contract section 13).
    let published = AccessTokenKeySet([.generate(.rs256), .generate(.es256)])
    let unpublished = AccessTokenKey.generate(.rs256)
    let clock = SettableClock(1_800_000_000)

    /// What `well-known` serves for `keys`, with its caching header.
    static func wellKnown(_ keys: AccessTokenKeySet) -> LoopbackHTTPServer.Response {
        .json(DiscoveryDocuments(issuer: issuer).document(.jwks, keys: keys),
              headers: [("Cache-Control", "public, max-age=\(DiscoveryDocuments.cacheSeconds)")])
    }

    func server(_ keys: AccessTokenKeySet? = nil) throws -> LoopbackHTTPServer {
        let response = Self.wellKnown(keys ?? published)
        return try LoopbackHTTPServer { request in
            request.path == "/.well-known/jwks.json" ? response : LoopbackHTTPServer.Response(status: 404)
        }
    }

    func verifier(_ server: LoopbackHTTPServer, audiences: [String] = [audience], cacheDirectory: String? = nil) throws -> AccessTokenVerifier {
        try AccessTokenVerifier(jwksURL: server.baseURL + "/.well-known/jwks.json", issuer: Self.issuer, audiences: audiences,
                                clockSkew: 60, cacheDirectory: cacheDirectory, httpClient: CurlHTTPClient(), clock: clock)
    }

    /// A token from the real issuer, signed by `key` (first of the set).
    func token(signedBy key: AccessTokenKey, issuer: String = issuer, audience: String = audience, user: String = "u-1",
               anonymous: Bool = false, at instant: Int64? = nil) throws -> String {
        try AccessTokenIssuer(keys: AccessTokenKeySet([key]), issuer: issuer, audience: audience, lifetime: 900)
            .issue(userID: user, sessionID: "s-1", now: instant ?? clock.nowSeconds, random: SystemRandomSource(), anonymous: anonymous)
    }

    func code(_ verifier: AccessTokenVerifier, _ token: String) -> ErrorCode? { Self.code(verifier, token) }

    /// The verification's error code; nil when the token passes.
    static func code(_ verifier: AccessTokenVerifier, _ token: String) -> ErrorCode? {
        do {
            _ = try verifier.verify(token)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func verifiesTokensOfEveryPublishedKeyWithOneFetch() throws {
        let server = try server()
        defer { server.stop() }
        let verifier = try verifier(server)
        for round in 0..<10 {
            for key in published.keys {
                let claims = try verifier.verify(try token(signedBy: key, user: "u-\(round)"))
                #expect(claims.userID == "u-\(round)" && claims.subject == claims.userID && claims.sessionID == "s-1")
                #expect(claims.issuer == Self.issuer && claims.audiences == [Self.audience] && !claims.isAnonymous)
                #expect(claims.issuedAt == clock.nowSeconds && claims.expiresAt == clock.nowSeconds + 900)
                #expect(claims.tokenID == claims.claims["jti"]?.stringValue && !claims.tokenID.isEmpty)
            }
        }
        let guest = try verifier.verify(try token(signedBy: published.keys[1], anonymous: true))
        #expect(guest.isAnonymous && guest.claims["is_anonymous"] == true)
        #expect(server.requestCount == 1, "the JWKS is fetched once and kept")
    }

    @Test func refusesAKeyThatIsNotPublishedAfterOneRefetch() throws {
        let server = try server()
        defer { server.stop() }
        let verifier = try verifier(server)
        _ = try verifier.verify(try token(signedBy: published.signing))
        #expect(code(verifier, try token(signedBy: unpublished)) == .accessTokenInvalid)
        #expect(server.requestCount == 1, "no refetch within 30 s of the last fetch")
        clock.advance(31)
        #expect(code(verifier, try token(signedBy: unpublished)) == .accessTokenInvalid)
        #expect(server.requestCount == 2, "then an unknown kid costs one refetch")
        #expect(code(verifier, try token(signedBy: unpublished)) == .accessTokenInvalid)
        #expect(server.requestCount == 2, "and not another within the cooldown")
    }

    @Test func refetchesOnceForTheNewKeyOfARotation() throws {
        let old = published.keys[0], new = published.keys[1]
        let server = try server(AccessTokenKeySet([old]))
        defer { server.stop() }
        let verifier = try verifier(server)
        _ = try verifier.verify(try token(signedBy: old))
        #expect(server.requestCount == 1)
        // `well-known` now publishes the new key; the verifier's copy is still fresh.
        server.respond { _ in Self.wellKnown(AccessTokenKeySet([new, old])) }
        clock.advance(31)
        for _ in 0..<5 { _ = try verifier.verify(try token(signedBy: new)) }
        _ = try verifier.verify(try token(signedBy: old))
        #expect(server.requestCount == 2, "one refetch for the new kid, then both verify from memory")
    }

    @Test func refusesWrongClaimsAndAlgorithms() throws {
        let server = try server()
        defer { server.stop() }
        let verifier = try verifier(server)
        let key = published.signing
        #expect(code(verifier, try token(signedBy: key, issuer: "https://other.example.test")) == .accessTokenInvalid)
        #expect(code(verifier, try token(signedBy: key, audience: "https://other-api.example.test")) == .accessTokenInvalid)
        let now = clock.nowSeconds
        #expect(code(verifier, try token(signedBy: key, at: now - 900 - 61)) == .accessTokenInvalid, "expired beyond the skew")
        #expect(code(verifier, try token(signedBy: key, at: now - 900 - 30)) == nil, "expired within the skew")

        var claims: [String: JSONValue] = ["iss": .string(Self.issuer), "sub": "u-1", "sid": "s-1", "iat": .number(now),
                                           "exp": .number(now + 900), "jti": "j-1"]
        // Another audience list naming ours, as RFC 7519 allows.
        claims["aud"] = ["https://elsewhere.example.test", .string(Self.audience)]
        #expect(try verifier.verify(try JWSSigner.sign(payload: claims, keyID: key.keyID, key: key.signingKey)).audiences.count == 2)
        claims["aud"] = .string(Self.audience)
        let payload = Base64.urlEncoded(JSONValue.object(claims).serializedBytes())
        func header(_ members: [String: JSONValue]) -> String { Base64.urlEncoded(JSONValue.object(members).serializedBytes()) }
        let unsigned = header(["alg": "none", "kid": .string(key.keyID)]) + "." + payload + "."
        #expect(code(verifier, unsigned) == .accessTokenInvalid)
        let hmacInput = header(["alg": "HS256", "kid": .string(key.keyID)]) + "." + payload
        // The classic confusion: the public key's published form used as an HMAC secret.
        let hmac = HMAC<SHA256>.authenticationCode(for: Array(hmacInput.utf8), using: SymmetricKey(data: key.publicJWK.serializedBytes()))
        #expect(code(verifier, hmacInput + "." + Base64.urlEncoded(Array(hmac))) == .accessTokenInvalid)
        let critical = try JWSSigner.sign(header: ["crit": ["exp"]], payload: claims, keyID: key.keyID, key: key.signingKey)
        #expect(code(verifier, critical) == .accessTokenInvalid)
        #expect(code(verifier, try JWSSigner.sign(payload: claims, keyID: key.keyID, key: key.signingKey)) == nil, "the same claims, properly signed")
        // An ES256 signature under the RSA key's kid: a key checks only signatures of its own kind.
        let ecKey = published.keys[1]
        let crossed = try JWSSigner.sign(payload: claims, keyID: key.keyID, key: ecKey.signingKey)
        #expect(code(verifier, crossed) == .accessTokenInvalid)
        #expect(code(verifier, try JWSSigner.sign(payload: claims, keyID: ecKey.keyID, key: ecKey.signingKey)) == nil)
        // iat and nbf: within the skew, then past it (API Gateway refuses a future iat).
        for (claim, offset, accepted) in [("iat", 30, true), ("iat", 61, false), ("nbf", 30, true), ("nbf", 61, false)] {
            var timed = claims
            timed[claim] = .number(now + Int64(offset))
            #expect((code(verifier, try JWSSigner.sign(payload: timed, keyID: key.keyID, key: key.signingKey)) == nil) == accepted,
                    "\(claim) \(offset) s ahead")
        }
        #expect(code(verifier, "not.a.token") == .accessTokenInvalid)
        #expect(server.requestCount == 1)
    }

    @Test func theAppMetadataClaimIsTyped() throws {
        let server = try server()
        defer { server.stop() }
        let verifier = try verifier(server)
        let issuer = AccessTokenIssuer(keys: published, issuer: Self.issuer, audience: Self.audience, lifetime: 900)
        let token = try issuer.issue(userID: "u-1", sessionID: "s-1", now: clock.nowSeconds, random: SystemRandomSource(),
                                     appMetadata: ["role": "admin", "seats": 5])
        let claims = try verifier.verify(token)
        #expect(claims.appMetadata == ["role": "admin", "seats": 5])
        #expect(claims.appMetadataString("role") == "admin" && claims.appMetadataString("seats") == nil)
        #expect(try verifier.verify(try self.token(signedBy: published.signing)).appMetadata.isEmpty)
    }

    @Test func aVerifierThatNeverGotKeysIsUnavailable() throws {
        let server = try server()
        server.stop()
        let verifier = try verifier(server)
        #expect(code(verifier, try token(signedBy: published.signing)) == .jwksUnavailable)
        let failing = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response(status: 503) }
        defer { failing.stop() }
        #expect(code(try self.verifier(failing), try token(signedBy: published.signing)) == .jwksUnavailable)
    }

    @Test func cachedKeysOutliveTheServer() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { TestSupport.removeTree(directory) }
        let server = try server()
        let resident = try verifier(server, cacheDirectory: directory)
        _ = try resident.verify(try token(signedBy: published.signing))
        server.stop()
        // In memory, even once stale: a failed refetch keeps the keys.
        clock.advance(7200)
        _ = try resident.verify(try token(signedBy: published.keys[1]))
        // On disk: a new process (a new verifier) starts from the file.
        let restarted = try verifier(server, cacheDirectory: directory)
        _ = try restarted.verify(try token(signedBy: published.signing))
        #expect(code(restarted, try token(signedBy: unpublished)) == .accessTokenInvalid)
    }

    @Test func derivesTheJWKSURLFromTheIssuerAndRefusesUnusableSettings() throws {
        let server = try server()
        defer { server.stop() }
        let verifier = try AccessTokenVerifier(issuer: server.baseURL + "/", audiences: [Self.audience], clock: clock)
        #expect(verifier.jwksURL == server.baseURL + "/.well-known/jwks.json")
        let tokenForIt = try token(signedBy: published.signing, issuer: server.baseURL + "/")
        #expect(try verifier.verify(tokenForIt).issuer == server.baseURL + "/")
        #expect(try AccessTokenVerifier(issuer: Self.issuer).jwksURL == Self.issuer + "/.well-known/jwks.json")
        for (url, audiences) in [("http://auth.example.test/.well-known/jwks.json", [Self.audience]), ("ftp://x", [Self.audience]),
                                 (Self.issuer + "/.well-known/jwks.json", [])] {
            #expect(throws: AuthError.self) { try AccessTokenVerifier(jwksURL: url, issuer: Self.issuer, audiences: audiences) }
        }
    }
}
