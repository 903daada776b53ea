import LambdaAuth
import LambdaAuthTooling

/// Issue 26: a returning user of a configured OpenID Connect provider beside a returning Google
/// user, in the same world, whole process and warm through the Runtime API. The provider's keys
/// are found through its discovery document on a loopback issuer, as an Okta or a Keycloak
/// publishes them, and cached before anything is timed (the discovery document and the JWKS, in
/// AUTH_CACHE_DIR for each new process): a timed sign-in that fetched would say so in the last row.
enum OIDCBench {
    static var section: BenchSection { BenchSection(name: "oidc", run: run) }

    static func run(_ table: inout BenchTable) {
        let okta: BenchOIDCIssuer
        do {
            okta = try BenchOIDCIssuer()
        } catch {
            table.add("oidc", "configured provider sign-in", "no loopback issuer could start: \(error)")
            return
        }
        defer { okta.server.stop() }
        let world = FlowBench.makeWorld(okta.environment)
        defer { FileSystem.removeTree(world.directory) }
        okta.publish(world.identityProvider)
        let now = SystemClock().nowSeconds
        guard let oktaToken = okta.token(world.identityProvider, subject: "00u-bench-okta", email: "bench-okta@example.com", now: now) else {
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
        let fetchesBefore = okta.server.requestCount
        let kinds = events.map { label, event in AlternatingSignIns.Kind(label: label) { Array(repeating: event, count: $0) } }
        guard AlternatingSignIns.measure(kinds, in: world, section: "oidc", &table) else { return }
        table.add("oidc", "discovery and JWKS fetches during the timed OIDC sign-ins (the untimed first: \(fetchesBefore))",
                  String(okta.server.requestCount - fetchesBefore), target: "0")
    }
}

/// The bench's configured provider `okta`: a loopback issuer publishing a world's dev key through
/// a discovery document, as an Okta authorization server does. It starts before the world (whose
/// AUTH_OIDC_PROVIDERS names it) and publishes the key the world made once there is one.
final class BenchOIDCIssuer {
    static let audience = "bench-okta"
    let server: LoopbackHTTPServer

    init() throws { server = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response(status: 503) } }

    var issuer: String { server.baseURL + "/oauth2/default" }
    var environment: [String: String] {
        let providers: JSONValue = [["name": "okta", "issuer": .string(issuer), "audiences": .array([.string(BenchOIDCIssuer.audience)])]]
        return ["AUTH_OIDC_PROVIDERS": providers.serialized()]
    }

    func publish(_ identityProvider: DevIdentityProvider) {
        let issuer = issuer, jwks = identityProvider.jwks(for: [.rs256])
        server.respond { request in
            switch request.path {
            case "/oauth2/default/.well-known/openid-configuration":
                return .json(["issuer": .string(issuer), "jwks_uri": .string(issuer + "/v1/keys")])
            case "/oauth2/default/v1/keys": return .json(jwks)
            default: return LoopbackHTTPServer.Response(status: 404)
            }
        }
    }

    func token(_ identityProvider: DevIdentityProvider, subject: String, email: String?, now: Int64) -> String? {
        var options = DevTokenOptions(subject: subject, audience: BenchOIDCIssuer.audience)
        options.email = email
        options.issuer = issuer
        return try? identityProvider.token(claims: options.claims(for: ProviderName(configured: "okta")!, now: now), algorithm: .rs256)
    }
}
