import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The JWKS cache's policy, proven against a loopback JWKS server that counts its requests.
final class JWKSCacheTests {
    let issuer = TestIssuer()
    let rotated = TestIssuer(keyIndex: 1, keyID: "test-key-1")
    let directory = TestSupport.temporaryDirectory()
    let clock: ManualClock
    let log = CapturedLog()
    let server: LoopbackHTTPServer

    init() throws {
        clock = ManualClock(Double(issuer.now))
        server = try LoopbackHTTPServer { _ in .init(status: 404) }
        serve([issuer], maxAge: "600")
    }

    deinit {
        server.stop()
        TestSupport.removeTree(directory)
    }

    /// From now on the server answers with these keys and this Cache-Control max-age (nil: no header).
    func serve(_ issuers: [TestIssuer], maxAge: String?) {
        let document = TestJWKS.document(issuers.map(\.jwk))
        // A new connection per fetch: curl retries a request once when a reused connection turns out
        // dead, which would make a dropped connection count twice.
        let headers = [("Connection", "close")] + (maxAge.map { [("Cache-Control", "public, max-age=\($0), must-revalidate")] } ?? [])
        server.respond { _ in .json(document, headers: headers) }
    }

    func verifier() throws -> IDTokenVerifier {
        let configuration = try AuthConfiguration.fromEnvironment(
            VerifierEnvironment.make(googleJWKS: server.baseURL + "/oauth2/v3/certs", cacheDirectory: directory))
        return IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                               httpClient: CurlHTTPClient(), clock: clock, logger: log.logger)
    }

    func token(_ signer: TestIssuer? = nil, kid: String? = nil) -> String {
        let signer = signer ?? issuer
        // Issued "now" on the manual clock, valid for a day, so that only the cache decides.
        return signer.token(signer.claims(changes: ["iat": .number(clock.nowSeconds), "exp": .number(clock.nowSeconds + 86_400)]),
                            keyID: kid)
    }

    func code(_ verifier: IDTokenVerifier, _ token: String) -> ErrorCode? {
        do {
            _ = try verifier.verify(token, provider: .google, nonce: nil)
            return nil
        } catch {
            return error.code
        }
    }

    var cacheFiles: [String] {
        ((try? FileSystem.listDirectory(directory)) ?? []).filter { $0.hasPrefix("lambda-auth-jwks-google-") && $0.hasSuffix(".json") }
    }

    @Test func oneFetchServesManyVerifications() throws {
        let verifier = try verifier()
        for _ in 0..<25 { #expect(code(verifier, token()) == nil) }
        #expect(server.requestCount == 1)
        #expect(server.requests.first?.path == "/oauth2/v3/certs")
        #expect(server.requests.first?.method == "GET")
    }

    @Test func keysAreRefetchedOnceTheirMaxAgeHasPassed() throws {
        serve([issuer], maxAge: "120")
        let verifier = try verifier()
        #expect(code(verifier, token()) == nil)
        clock.advance(by: 119)
        #expect(code(verifier, token()) == nil)
        #expect(server.requestCount == 1)
        clock.advance(by: 1)
        #expect(code(verifier, token()) == nil)
        #expect(code(verifier, token()) == nil)
        #expect(server.requestCount == 2)
    }

    @Test(arguments: [("5", 60.0), ("9999999", 86_400.0), (nil, 3600.0), ("abc", 3600.0)] as [(String?, Double)])
    func maxAgeIsClampedAndDefaults(_ maxAge: String?, _ lifetime: Double) throws {
        serve([issuer], maxAge: maxAge)
        let verifier = try verifier()
        #expect(code(verifier, token()) == nil)
        clock.advance(by: lifetime - 1)
        #expect(code(verifier, token()) == nil)
        #expect(server.requestCount == 1)
        clock.advance(by: 1)
        #expect(code(verifier, token()) == nil)
        #expect(server.requestCount == 2)
    }

    @Test func anUnknownKidTriggersOneRefetchThatFindsARotatedKey() throws {
        let verifier = try verifier()
        #expect(code(verifier, token()) == nil)
        serve([issuer, rotated], maxAge: "600")
        clock.advance(by: 31)
        #expect(code(verifier, token(rotated)) == nil)
        #expect(server.requestCount == 2)
        #expect(code(verifier, token(rotated)) == nil)
        #expect(server.requestCount == 2)
    }

    @Test func anUnknownKidCostsAtMostOneFetchAndNoneDuringTheCooldown() throws {
        let verifier = try verifier()
        #expect(code(verifier, token()) == nil)
        clock.advance(by: 30)
        #expect(code(verifier, token(kid: "forged-1")) == .unknownKeyID)
        #expect(server.requestCount == 2)
        // A storm of forged kids within 30 s of that refetch: no fetch at all.
        for index in 0..<20 {
            clock.advance(by: 1)
            #expect(code(verifier, token(kid: "forged-\(index)")) == .unknownKeyID)
        }
        #expect(server.requestCount == 2)
        // ...while the real kid keeps working from memory.
        #expect(code(verifier, token()) == nil)
        clock.advance(by: 10)
        #expect(code(verifier, token(kid: "forged-again")) == .unknownKeyID)
        #expect(server.requestCount == 3)
    }

    @Test func aKidUnknownRightAfterTheFirstFetchIsNotRefetched() throws {
        let verifier = try verifier()
        #expect(code(verifier, token(kid: "forged")) == .unknownKeyID)
        #expect(server.requestCount == 1)
    }

    @Test(arguments: ["500", "drop", "garbage", "no keys", "oversized", "redirect"])
    func cachedKeysServePastTheirAgeWhenTheServerFails(_ failure: String) throws {
        let verifier = try verifier()
        #expect(code(verifier, token()) == nil)
        server.respond { _ in JWKSCacheTests.failingResponse(failure) }
        clock.advance(by: 601)
        #expect(code(verifier, token()) == nil)
        #expect(server.requestCount == 2)
        // The failed attempt starts the cooldown: no fetch per request during an outage.
        clock.advance(by: 10)
        #expect(code(verifier, token()) == nil)
        #expect(server.requestCount == 2)
        // Once the server is back, the next attempt after the cooldown refreshes the keys.
        serve([issuer, rotated], maxAge: "600")
        clock.advance(by: 25)
        #expect(code(verifier, token(rotated)) == nil)
        #expect(server.requestCount == 3)
    }

    /// Contract section 13: through an outage, cached keys serve for 24 hours past their
    /// freshness (600 s here), then JWKS_UNAVAILABLE until a fetch succeeds again.
    @Test func cachedKeysServeThroughAnOutageForADayPastTheirFreshnessAtMost() throws {
        let verifier = try verifier()
        #expect(code(verifier, token()) == nil)
        server.respond { _ in .init(status: 503) }
        clock.advance(by: 600 + 86_400 - 1)
        #expect(code(verifier, token()) == nil, "a second before the day is over")
        clock.advance(by: 1)
        #expect(code(verifier, token()) == .jwksUnavailable)
        clock.advance(by: 31)
        #expect(code(verifier, token()) == .jwksUnavailable, "after the cooldown too, while the server still fails")
        serve([issuer], maxAge: "600")
        clock.advance(by: 31)
        #expect(code(verifier, token()) == nil)
    }

    @Test(arguments: ["500", "drop", "garbage", "no keys", "oversized", "redirect"])
    func withNothingCachedAFailedFetchIsJWKSUnavailable(_ failure: String) throws {
        server.respond { _ in JWKSCacheTests.failingResponse(failure) }
        let verifier = try verifier()
        #expect(code(verifier, token()) == .jwksUnavailable)
        // With nothing to serve, every request tries again (the client retries on 503).
        #expect(code(verifier, token()) == .jwksUnavailable)
        #expect(server.requestCount == 2)
        serve([issuer], maxAge: "600")
        #expect(code(verifier, token()) == nil)
    }

    @Test func aFailedRefetchForAnUnknownKidIsJWKSUnavailable() throws {
        let verifier = try verifier()
        #expect(code(verifier, token()) == nil)
        server.respond { _ in .init(status: 503) }
        clock.advance(by: 31)
        // The kid may be a new real key we could not check for: retryable, not a verdict.
        #expect(code(verifier, token(rotated)) == .jwksUnavailable)
        #expect(code(verifier, token()) == nil)
    }

    static func failingResponse(_ kind: String) -> LoopbackHTTPServer.Response {
        switch kind {
        case "500": return .init(status: 500, text: "oops")
        case "drop": return .drop
        case "garbage": return .init(status: 200, text: "<html>")
        case "no keys": return .json(["keys": []])
        // Redirects are not followed: a redirect must not choose where keys come from.
        case "redirect": return .init(status: 302, headers: [("Location", "/oauth2/v3/certs")], text: "")
        default: return .init(status: 200, body: [UInt8](repeating: 0x20, count: (1 << 20) + 1))
        }
    }

    @Test func concurrentVerificationsOfAColdProviderShareOneFetch() throws {
        let document = issuer.jwks
        server.respond { _ in LoopbackHTTPServer.Response(status: 200, headers: [("Connection", "close")],
                                                          body: document.serializedBytes(), delaySeconds: 0.2) }
        let verifier = try verifier()
        let token = token()
        let results = CapturedLog()
        let threads = 8
        for _ in 0..<threads {
            BackgroundThread.detach {
                var failures = 0
                for _ in 0..<10 where (try? verifier.verify(token, provider: .google, nonce: nil)) == nil { failures += 1 }
                results.logger.info("done", metadata: ["failures": .number(failures)])
            }
        }
        let deadline = monotonicSeconds() + 20
        while results.lines.count < threads, monotonicSeconds() < deadline { usleep(10_000) }
        #expect(results.lines.count == threads)
        #expect(results.lines.allSatisfy { $0.contains(#""failures":0"#) })
        #expect(server.requestCount == 1)
    }

    // MARK: the disk cache, for the next process

    @Test func aNewVerifierReusesTheDiskCache() throws {
        #expect(code(try verifier(), token()) == nil)
        #expect(server.requestCount == 1)
        #expect(cacheFiles.count == 1)
        let next = try verifier()
        for _ in 0..<5 { #expect(code(next, token()) == nil) }
        #expect(server.requestCount == 1)
        // Its age counts from the original fetch, not from the read.
        clock.advance(by: 600)
        #expect(code(next, token()) == nil)
        #expect(server.requestCount == 2)
    }

    @Test func theCooldownIsSharedThroughTheDiskCache() throws {
        let first = try verifier()
        #expect(code(first, token()) == nil)
        clock.advance(by: 40)
        #expect(code(first, token(kid: "forged-1")) == .unknownKeyID)
        #expect(server.requestCount == 2)
        // A new process 5 s later with another forged kid: the recorded refetch holds it back.
        clock.advance(by: 5)
        #expect(code(try verifier(), token(kid: "forged-2")) == .unknownKeyID)
        #expect(server.requestCount == 2)
    }

    @Test func aFileCacheIsWrittenPrivately() throws {
        #expect(code(try verifier(), token()) == nil)
        let path = directory + "/" + (cacheFiles.first ?? "none")
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        let stored = try JSONValue.parse(FileSystem.readFile(path))
        #expect(stored["jwks"] == issuer.jwks)
        #expect(stored["lifetime"] == 600)
    }

    @Test(arguments: ["truncated", "not json", "other url", "future", "no usable key", "world-writable", "bad lifetime"])
    func anUntrustworthyCacheFileIsIgnored(_ corruption: String) throws {
        #expect(code(try verifier(), token()) == nil)
        let path = directory + "/" + (cacheFiles.first ?? "none")
        let original = try FileSystem.readFile(path)
        var stored = try JSONValue.parse(original).objectValue ?? [:]
        var bytes: [UInt8]?
        var mode: mode_t = 0o600
        switch corruption {
        case "truncated": bytes = Array(original.prefix(original.count / 2))
        case "not json": bytes = Array("{\"version\":1,".utf8)
        case "other url": stored["location"] = "https://example.com/certs"
        case "future": stored["fetchedAtMs"] = .number(Int64(clock.now() + 3600) * 1000)
        // A planted key: served by no one, present only in the file.
        case "no usable key": stored["jwks"] = TestJWKS.document([rotated.jwk.replacing("use", with: "enc")])
        case "world-writable": mode = 0o666
        default: stored["lifetime"] = 999_999
        }
        try FileSystem.writeAtomically(path, bytes ?? JSONValue.object(stored).serializedBytes(), mode: mode, durable: false)
        chmod(path, mode)
        let next = try verifier()
        #expect(code(next, token()) == nil)
        #expect(server.requestCount == 2)
        #expect(log.lines.contains { $0.contains("ignoring the JWKS cache file") })
    }

    @Test func aPlantedKeyInAWorldWritableCacheFileIsNotTrusted() throws {
        #expect(code(try verifier(), token()) == nil)
        let path = directory + "/" + (cacheFiles.first ?? "none")
        var stored = try JSONValue.parse(FileSystem.readFile(path)).objectValue ?? [:]
        let forger = TestIssuer(keyIndex: 2, keyID: "planted")
        stored["jwks"] = forger.jwks
        try FileSystem.writeAtomically(path, JSONValue.object(stored).serializedBytes(), mode: 0o666, durable: false)
        chmod(path, 0o666)
        #expect(code(try verifier(), token(forger)) == .unknownKeyID)
    }

    @Test func anUnwritableCacheDirectoryOnlyCostsFetches() throws {
        let configuration = try AuthConfiguration.fromEnvironment(
            VerifierEnvironment.make(googleJWKS: server.baseURL + "/certs", cacheDirectory: "/proc/no-such-dir"))
        let verifier = IDTokenVerifier(providers: configuration.identityProviders, clockSkew: configuration.clockSkew, cacheDirectory: configuration.cacheDirectory,
                                       httpClient: CurlHTTPClient(), clock: clock, logger: log.logger)
        #expect(code(verifier, token()) == nil)
        #expect(code(verifier, token()) == nil)
        #expect(server.requestCount == 1)
        #expect(log.lines.contains { $0.contains("cannot write the JWKS cache file") })
    }
}

extension JSONValue {
    func replacing(_ member: String, with value: JSONValue) -> JSONValue {
        var members = objectValue ?? [:]
        members[member] = value
        return .object(members)
    }
}
