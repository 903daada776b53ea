import LambdaAuth
import LambdaAuthTooling

/// Issue 26: a returning user of a configured OpenID Connect provider beside a returning Google
/// user, in the same world, whole process and warm through the Runtime API. The provider's keys
/// are found through its discovery document on a loopback issuer, as an Okta or a Keycloak
/// publishes them, and cached before anything is timed (the discovery document and the JWKS, in
/// AUTH_CACHE_DIR for each new process): a timed sign-in that fetched would say so in the last row.
enum OIDCBench {
    static var section: BenchSection { BenchSection(name: "oidc", run: run) }
    static let warmUp = 20, warmRuns = 201, blocks = 2

    static func run(_ table: inout BenchTable) {
        // The issuer's address goes into the world's AUTH_OIDC_PROVIDERS, and the world makes the
        // key the issuer publishes: the server starts first and learns what to answer after.
        let issuer: LoopbackHTTPServer
        do {
            issuer = try LoopbackHTTPServer { _ in .drop }
        } catch {
            table.add("oidc", "configured provider sign-in", "no loopback issuer could start: \(error)")
            return
        }
        defer { issuer.stop() }
        let issuerURL = issuer.baseURL + "/oauth2/default"
        let providers: JSONValue = [["name": "okta", "issuer": .string(issuerURL), "audiences": ["bench-okta"]]]
        let world = FlowBench.makeWorld(["AUTH_OIDC_PROVIDERS": providers.serialized()])
        defer { FileSystem.removeTree(world.directory) }
        let identityProvider = world.identityProvider
        let jwks = identityProvider.jwks(for: [.rs256])
        issuer.respond { request in
            switch request.path {
            case "/oauth2/default/.well-known/openid-configuration":
                return .json(["issuer": .string(issuerURL), "jwks_uri": .string(issuerURL + "/v1/keys")])
            case "/oauth2/default/v1/keys": return .json(jwks)
            default: return LoopbackHTTPServer.Response(status: 404)
            }
        }

        let now = SystemClock().nowSeconds
        var options = DevTokenOptions(subject: "00u-bench-okta", audience: "bench-okta")
        options.email = "bench-okta@example.com"
        options.issuer = issuerURL
        guard let oktaToken = try? identityProvider.token(claims: options.claims(for: ProviderName(configured: "okta")!, now: now),
                                                          algorithm: .rs256) else {
            table.add("oidc", "configured provider sign-in", "the dev identity provider could not sign a token")
            return
        }
        let googleToken = world.token(.google, subject: "bench-google-returning", email: "bench-google@example.com", now: now)
        let events: [(label: String, event: JSONValue)] = [
            ("returning Google user", ["provider": "google", "idToken": .string(googleToken)]),
            ("returning user of a configured OIDC provider (discovery and keys cached)", ["provider": "okta", "idToken": .string(oktaToken)]),
        ]
        // Untimed: creates both users and fills the key caches (memory is per process; the files stay).
        for (_, event) in events { _ = world.invoke("signin", event) }
        let fetchesBefore = issuer.requestCount

        // The two providers alternate in blocks, as the signing section's algorithms do, so that
        // both see the same machine.
        var whole: [String: [Double]] = [:], warm: [String: [Double]] = [:]
        for _ in 0..<blocks {
            for (label, event) in events {
                switch EveryHandlerBench.wholeProcess(ProcessRunner.executable("signin"), environment: world.environment, event: { _ in event }) {
                case .success(let samples): whole[label, default: []] += samples
                case .failure(let reason):
                    table.add("oidc", "signin whole process, \(label)", reason.description)
                    return
                }
                switch ResidentHandler.measure(ProcessRunner.executable("signin"), environment: world.environment,
                                               warmUp: warmUp, count: warmRuns, event: { _ in event }) {
                case .success(let samples): warm[label, default: []] += samples
                case .failure(let reason):
                    table.add("oidc", "warm signin, \(label)", reason.description)
                    return
                }
            }
        }
        for (label, _) in events {
            let samples = whole[label] ?? []
            table.add("oidc", "signin whole process (stdin mode), \(label), median of \(samples.count)", format(percentile(samples, 0.5)) + " ms")
        }
        for (label, _) in events {
            let samples = warm[label] ?? []
            table.add("oidc", "warm signin through the Runtime API, \(label), median / p99 of \(samples.count)",
                      format(percentile(samples, 0.5), decimals: 3) + " / " + format(percentile(samples, 0.99), decimals: 3) + " ms")
        }
        table.add("oidc", "discovery and JWKS fetches during the timed OIDC sign-ins (the untimed first: \(fetchesBefore))",
                  String(issuer.requestCount - fetchesBefore), target: "0")
    }
}
