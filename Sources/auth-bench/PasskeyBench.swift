import LambdaAuth
import LambdaAuthTooling

/// Issue 28: a returning user's passkey sign-in beside a returning Google user's, in the same world,
/// whole process (stdin mode) and warm through the Runtime API, alternating in blocks
/// (`AlternatingSignIns`) as the oidc section's providers do. The passkey is ES256 with attestation
/// none, registered once by the software authenticator of `LambdaAuthTooling` (as `authctl demo`
/// does); each timed sign-in presents a challenge of its own from `login-options` (asked for
/// untimed, just before its block) and an assertion whose sign count is one above the last.
enum PasskeyBench {
    static var section: BenchSection { BenchSection(name: "passkeys", run: run) }

    /// A user of `world` with one passkey, and the authenticator that holds it.
    struct Holder {
        let world: FlowBench.World
        var authenticator: SoftPasskeyAuthenticator

        /// Signs `subject` in with Google and registers a passkey for that user.
        init?(_ world: FlowBench.World, subject: String) {
            self.world = world
            let now = SystemClock().nowSeconds
            let google = world.token(.google, subject: subject, email: subject + "@example.com", now: now)
            guard let accessToken = world.invoke("signin", ["provider": "google", "idToken": .string(google)]).body["tokens"]?["accessToken"] else {
                return nil
            }
            let options = world.invoke("passkey", ["action": "register-options", "accessToken": accessToken]).body["publicKey"]
            guard let challenge = options?["challenge"]?.stringValue.flatMap(Base64.urlDecoded),
                  let handle = options?["user"]?["id"]?.stringValue.flatMap(Base64.urlDecoded) else { return nil }
            authenticator = SoftPasskeyAuthenticator(rpID: world.environment["AUTH_PASSKEY_RP_ID"]!,
                                                     origin: "https://" + world.environment["AUTH_PASSKEY_RP_ID"]!, userHandle: handle)
            let registered = world.invoke("passkey", ["action": "register", "accessToken": accessToken, "name": "bench",
                                                      "credential": authenticator.registration(challenge: challenge)]).body
            guard registered["passkey"] != nil else { return nil }
        }

        /// The next `count` sign-in events, in the order they must be presented: each with a fresh
        /// `login-options` challenge (one process each, untimed) and the next sign count.
        mutating func signIns(_ count: Int) -> [JSONValue] {
            (0..<count).map { _ in
                let options = world.invoke("passkey", ["action": "login-options"]).body
                guard let challenge = options["publicKey"]?["challenge"]?.stringValue.flatMap(Base64.urlDecoded) else {
                    fatalError("bench: login-options gave no challenge: \(options.serialized())")
                }
                return ["provider": "passkey", "credential": authenticator.assertion(challenge: challenge)]
            }
        }
    }

    static func run(_ table: inout BenchTable) {
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        guard var holder = Holder(world, subject: "bench-passkey") else {
            table.add("passkeys", "passkey sign-in", "no passkey could be registered")
            return
        }
        let google: JSONValue = ["provider": "google", "idToken": .string(world.token(.google, subject: "bench-google-returning",
                                                                                        email: "bench-google@example.com", now: SystemClock().nowSeconds))]
        _ = world.invoke("signin", google)  // untimed: creates the user
        AlternatingSignIns.measure([AlternatingSignIns.Kind(label: "returning Google user") { Array(repeating: google, count: $0) },
                                    AlternatingSignIns.Kind(label: "returning user's passkey (ES256)") { holder.signIns($0) }],
                                   in: world, section: "passkeys", &table)
    }
}
