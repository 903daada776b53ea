import LambdaAuth
import LambdaAuthTooling
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Contract section 20's costs: the `authorizer`'s warm invocation (the invocation path the zip
/// runs, in this process: decode, the JWT authorizer's rules, the revocation list from memory)
/// with 10 and with 10,000 revoked sessions listed, and `AccessTokenVerifier`'s per-token cost with
/// the revocation feed beside the same verifier without it (target: at most 5 % more).
enum RevocationBench {
    static var section: BenchSection { BenchSection(name: "revocation", run: run) }

    static func run(_ table: inout BenchTable) {
        let name = "revocation"
        do {
            for listed in [10, 10_000] {
                let (median, p99, read) = try authorizerInvocation(listed: listed)
                table.add(name, "authorizer warm invocation, \(listed) revoked sessions listed: median / p99 (in-process)",
                          format(median * 1e6, decimals: 1) + " / " + format(p99 * 1e6, decimals: 1) + " µs")
                table.add(name, "its read of the list from the table (local store), \(listed) listed: once per 5 s per process",
                          format(read * 1e3, decimals: 2) + " ms")
            }
            let (plain, withFeed, fetch) = try verifierCost()
            table.add(name, "AccessTokenVerifier.verify, RS256, warm: without / with the revocation feed",
                      format(plain * 1e6, decimals: 2) + " / " + format(withFeed * 1e6, decimals: 2) + " µs")
            table.add(name, "the feed's added cost per token", format(100 * (withFeed - plain) / plain, decimals: 1) + " %", target: "<= 5 %")
            table.add(name, "one feed refresh (10,000 listed: parse, verify the signature), once per 5 s per process",
                      format(fetch * 1e3, decimals: 2) + " ms")
        } catch {
            table.add(name, "setup failed", String(describing: error))
        }
    }

    static func temporaryDirectory() -> String {
        var template = Array("/tmp/lambda-auth-bench-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    static func authorizerInvocation(listed: Int) throws -> (median: Double, p99: Double, read: Double) {
        let directory = temporaryDirectory()
        defer { _ = try? ProcessRunner.run("/bin/rm", arguments: ["-rf", directory]) }
        let key = AccessTokenKey.generate(.rs256)
        let environment = ["AUTH_STORE": directory + "/store", "AUTH_SIGNING_KEYS": key.pemRepresentation,
                           "AUTH_ISSUER": "https://auth.example.com", "AUTH_LOG_LEVEL": "error"]
        let services = try AuthServices.start(environment: environment, logger: Logger.jsonLines(level: .error))
        try services.administration.listRevokedSessions((0..<listed).map { "revoked-session-\($0)" })
        let handler = try HandlerCatalogue.authorizer.compose(services)
        let now = SystemClock().nowSeconds
        let token = try AccessTokenIssuer(key: key, issuer: "https://auth.example.com", lifetime: 900)
            .issue(userID: "bench-user", sessionID: "bench-session", now: now - 1, random: SystemRandomSource())
        let event: JSONValue = ["version": "2.0", "type": "REQUEST",
                                "routeArn": "arn:aws:execute-api:us-east-1:123456789012:abcdef123/$default/GET/orders",
                                "identitySource": [.string("Bearer " + token)], "headers": ["authorization": .string("Bearer " + token)],
                                "requestContext": ["http": ["method": "GET", "path": "/orders"]]]
        let bytes = event.serializedBytes()
        let context = InvocationContext(requestID: "bench", logger: Logger.jsonLines(level: .error))
        func invoke() throws -> Bool {
            guard case .success(let request) = EventCodec.decode(bytes).request else { return false }
            let response = try HandlerMain.respond(to: request, context: context, testMode: false) { handler }
            return response.body["isAuthorized"] == true
        }
        // Warm: the list read once, the key parsed.
        for _ in 0..<50 { guard try invoke() else { throw BenchFailure("the authorizer refused the bench token") } }
        var samples: [Double] = []
        let end = monotonicSeconds() + 2
        while monotonicSeconds() < end || samples.count < 1000 {
            let start = monotonicSeconds()
            _ = try invoke()
            samples.append(monotonicSeconds() - start)
        }
        samples.sort()
        // The list's own read, which a warm invocation pays once per 5 s: a fresh cache's first.
        var read = Double.infinity
        for _ in 0..<5 {
            let cache = services.makeRevocationCache()
            let start = monotonicSeconds()
            guard try cache.current().sessionIDs.count == listed else { throw BenchFailure("the list read back is not the one written") }
            read = min(read, monotonicSeconds() - start)
        }
        return (samples[samples.count / 2], samples[samples.count * 99 / 100], read)
    }

    static func verifierCost() throws -> (plain: Double, withFeed: Double, fetch: Double) {
        let directory = temporaryDirectory()
        defer { _ = try? ProcessRunner.run("/bin/rm", arguments: ["-rf", directory]) }
        let key = AccessTokenKey.generate(.rs256)
        let issuer = AccessTokenIssuer(key: key, issuer: "https://auth.example.com", lifetime: 900)
        let now = SystemClock().nowSeconds
        try FileSystem.writeAtomically(directory + "/jwks.json", key.jwks.serializedBytes(), durable: false)
        // 10,000 listed: the set look-ups of a large list, not of an empty one.
        let list = RevocationList(sessionIDs: Set((0..<10_000).map { "revoked-session-\($0)" }), issuedAt: now)
        try FileSystem.writeAtomically(directory + "/revocations", Array(try issuer.sign(list: list).utf8), durable: false)
        let plain = try AccessTokenVerifier(jwksURL: "file://\(directory)/jwks.json", issuer: "https://auth.example.com")
        // A maximum age beyond the measurement: what is measured is the per-token cost, not the fetch.
        let withFeed = try AccessTokenVerifier(jwksURL: "file://\(directory)/jwks.json", issuer: "https://auth.example.com",
                                               revocations: RevocationFeedSettings(url: "file://\(directory)/revocations", maximumAge: 60))
        let token = try issuer.issue(userID: "bench-user", sessionID: "bench-session", now: now - 1, random: SystemRandomSource())
        func perToken(_ verifier: AccessTokenVerifier) -> Double {
            var best = Double.infinity
            for _ in 0..<15 {
                let start = monotonicSeconds()
                for _ in 0..<200 { _ = try? verifier.verify(token) }
                best = min(best, (monotonicSeconds() - start) / 200)
            }
            return best
        }
        guard (try? withFeed.verify(token)) != nil, (try? plain.verify(token)) != nil else { throw BenchFailure("verification failed") }
        // Alternating, each side's best slice: a shared machine steals whole slices, not a share of each call.
        var a = Double.infinity, b = Double.infinity
        for _ in 0..<4 {
            a = min(a, perToken(plain))
            b = min(b, perToken(withFeed))
        }
        let document = try issuer.sign(list: list)
        var fetch = Double.infinity
        for _ in 0..<10 {
            let start = monotonicSeconds()
            _ = try RevocationDocument.parse(document, issuer: "https://auth.example.com", now: now) { _ in JSONWebKey(keyID: key.keyID, material: key.signingKey.publicMaterial) }
            fetch = min(fetch, monotonicSeconds() - start)
        }
        return (a, b, fetch)
    }

    struct BenchFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
