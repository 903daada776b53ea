import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// Whole-process invocation times of the three handlers on a warm JWKS cache (issue 4: median at
/// most 15 ms each), then the same with 100,000 users in the store (at most 1.5 times as long).
enum FlowBench {
    static var section: BenchSection { BenchSection(name: "flows", run: run) }
    static let rounds = 41

    struct World {
        let directory: String
        let environment: [String: String]
        let identityProvider: DevIdentityProvider

        func token(_ provider: ProviderName, subject: String, email: String?, now: Int64) -> String {
            var options = DevTokenOptions(subject: subject, audience: provider == .google ? "bench-web" : "com.example.bench")
            options.email = email
            return try! identityProvider.token(claims: options.claims(for: provider, now: now), provider: provider)
        }

        /// Runs one handler process; returns the response body and the wall time in milliseconds.
        func invoke(_ handler: String, _ event: JSONValue) -> (body: JSONValue, milliseconds: Double) {
            let started = monotonicSeconds()
            let output: ProcessRunner.Output
            do {
                output = try ProcessRunner.run(ProcessRunner.executable(handler), environment: environment, stdin: event.serializedBytes())
            } catch {
                fatalError("bench: \(error)")
            }
            let elapsed = (monotonicSeconds() - started) * 1000
            guard let body = output.json, body["error"] == nil else {
                fatalError("bench: \(handler) failed: \(output.stdoutText) \(output.stderrText.suffix(400))")
            }
            return (body, elapsed)
        }
    }

    /// One key of each algorithm for the whole run (PEM), made once: RSA generation takes a while.
    static let benchSigningKeys: [JWSAlgorithm: String] = [
        .es256: AccessTokenKey.generate(.es256).pemRepresentation, .rs256: AccessTokenKey.generate(.rs256).pemRepresentation,
    ]

    /// A world on the local store, or on another backend when `overrides` say so (AUTH_STORE, …).
    static func makeWorld(_ overrides: [String: String] = [:]) -> World {
        let directory = try! FileSystem.makeTemporaryDirectory(prefix: "lambda-auth-flow-bench")
        let provider = try! DevIdentityProvider.initialize(directory: directory + "/idp").provider
        let jwks = "file://" + DevIdentityProvider.jwksPath(in: directory + "/idp")
        var environment = [
            "AUTH_GOOGLE_AUDIENCES": "bench-web", "AUTH_APPLE_AUDIENCES": "com.example.bench",
            "AUTH_GOOGLE_JWKS_URL": jwks, "AUTH_APPLE_JWKS_URL": jwks,
            "AUTH_STORE": directory + "/store", "AUTH_CACHE_DIR": directory + "/cache", "AUTH_LOG_LEVEL": "warning",
            "AUTH_CREDENTIALS_SECRET": "bench-credentials-secret-0123456789", "AUTH_GUEST": "on", "AUTH_PASSKEY_RP_ID": "example.com",
            // Email codes through the outbox; the bench sends more codes per address than users may.
            "AUTH_EMAIL": "on", "AUTH_EMAIL_SENDER": "outbox:" + directory + "/outbox", "AUTH_OTP_RATE": "1000",
            // Required on DynamoDB (the local store would keep a dev key itself).
            "AUTH_OTP_KEY": "YmVuY2gtb3RwLWtleS0wMTIzNDU2Nzg5YWJjZGVmMDE=",
            // Second factors (the mfa section; users without one sign in as before). The data key
            // is required on DynamoDB as well.
            "AUTH_MFA": "optional", "AUTH_DATA_KEY": "YmVuY2gtbWZhLWRhdGEta2V5LTAxMjM0NTY3ODlhYmM=",
            // ES256, so that every row keeps measuring what it measured before RS256; the signing
            // section sets each algorithm itself and names it in its rows.
            "AUTH_SIGNING_KEYS": benchSigningKeys[.es256]!,
        ]
        environment.merge(overrides) { $1 }
        return World(directory: directory, environment: environment, identityProvider: provider)
    }

    /// Median wall time of signin (returning user), refresh (a rotation chain) and link-provider
    /// (alternating link and unlink).
    static func measure(_ world: World) -> [String: Double] {
        let now = SystemClock().nowSeconds
        var signIn: [Double] = [], refresh: [Double] = [], link: [Double] = []
        var session = world.invoke("signin", ["provider": "google", "idToken": .string(world.token(.google, subject: "bench-user", email: "bench@example.com", now: now))]).body
        for _ in 0..<rounds {
            let token = world.token(.google, subject: "bench-user", email: "bench@example.com", now: now)
            let result = world.invoke("signin", ["provider": "google", "idToken": .string(token)])
            signIn.append(result.milliseconds)
            session = result.body  // earlier sessions are evicted by the session limit
        }
        // Guest creation (direct invocations: no source IP, so no rate limit), beside Google's.
        var guestSignIn: [Double] = []
        for _ in 0..<rounds {
            guestSignIn.append(world.invoke("signin", ["provider": "guest"]).milliseconds)
        }
        // Email codes: otp-start (a new address each round), and signin with the code just sent
        // to a returning user (the otp-start before it not timed).
        var otpStart: [Double] = [], emailSignIn: [Double] = []
        let outbox = String(world.environment["AUTH_EMAIL_SENDER"]!.dropFirst("outbox:".count))
        for round in 0..<rounds {
            otpStart.append(world.invoke("otp-start", ["email": .string("bench-start-\(round)@example.com")]).milliseconds)
            _ = world.invoke("otp-start", ["email": "bench-email@example.com"])
            guard let code = Outbox.latestCode(to: "bench-email@example.com", in: outbox) else { fatalError("bench: no code in the outbox") }
            emailSignIn.append(world.invoke("signin", ["provider": "email", "email": "bench-email@example.com", "code": .string(code)]).milliseconds)
        }
        var refreshToken = session["tokens"]!["refreshToken"]!
        for _ in 0..<rounds {
            let result = world.invoke("refresh", ["refreshToken": refreshToken])
            refresh.append(result.milliseconds)
            refreshToken = result.body["tokens"]!["refreshToken"]!
            session = result.body
        }
        let accessToken = session["tokens"]!["accessToken"]!
        let apple = world.token(.apple, subject: "000123.bench", email: nil, now: now)
        for round in 0..<rounds {
            let event: JSONValue = round % 2 == 0
                ? ["provider": "apple", "idToken": .string(apple), "accessToken": accessToken]
                : ["provider": "apple", "action": "unlink", "accessToken": accessToken]
            link.append(world.invoke("link-provider", event).milliseconds)
        }
        // Sign-out of a session opened just before (not timed), and deletion of a user created
        // just before (a fresh session: no re-authentication).
        var signOut: [Double] = [], deletion: [Double] = []
        for round in 0..<rounds {
            let token = world.token(.google, subject: "bench-user", email: "bench@example.com", now: now)
            let opened = world.invoke("signin", ["provider": "google", "idToken": .string(token)]).body
            signOut.append(world.invoke("signout", ["accessToken": opened["tokens"]!["accessToken"]!]).milliseconds)
            let leaver = world.token(.google, subject: "bench-leaver-\(round)", email: "leaver\(round)@example.com", now: now)
            let created = world.invoke("signin", ["provider": "google", "idToken": .string(leaver)]).body
            deletion.append(world.invoke("delete-account", ["accessToken": created["tokens"]!["accessToken"]!]).milliseconds)
        }
        return ["signin": percentile(signIn, 0.5), "signin (guest)": percentile(guestSignIn, 0.5),
                "otp-start": percentile(otpStart, 0.5), "signin (email code)": percentile(emailSignIn, 0.5), "refresh": percentile(refresh, 0.5), "link-provider": percentile(link, 0.5),
                "signout": percentile(signOut, 0.5), "delete-account": percentile(deletion, 0.5)]
    }

    static func run(_ table: inout BenchTable) {
        // Two stores measured under the same conditions: both after the large fill, and after its
        // gigabytes of writeback have reached the disk (sync), which would otherwise slow every
        // fsync of whichever store is measured right after the fill.
        let small = makeWorld(), large = makeWorld()
        defer {
            FileSystem.removeTree(small.directory)
            FileSystem.removeTree(large.directory)
        }
        writeStandardErrorLine("bench: flows: filling a store with 100,000 users…")
        let fill = monotonicSeconds()
        LargeStoreFixture.fill(directory: large.environment["AUTH_STORE"]!, users: 100_000)
        table.add("flows", "store fill, 100k users (import)", format(monotonicSeconds() - fill, decimals: 1) + " s")
        sync()
        // The floor of a process on this machine, in this run: each handler's median beside it.
        let work = try! FileSystem.makeTemporaryDirectory(prefix: "lambda-auth-flow-floor")
        defer { FileSystem.removeTree(work) }
        switch FloorBench.staticExitZero(in: work) {
        case .success(let binary):
            table.add("flows", "static exit-0 process (gcc -static), median of \(rounds)", format(FloorBench.spawnMedian(binary, runs: rounds)) + " ms")
        case .failure(let reason):
            table.add("flows", "static exit-0 process", reason.description)
        }
        let smallTimes = measure(small)
        let largeTimes = measure(large)
        for handler in ["signin", "signin (guest)", "otp-start", "signin (email code)", "refresh", "link-provider", "signout", "delete-account"] {
            table.add("flows", "\(handler) invocation, median (small store)", format(smallTimes[handler]!) + " ms", target: "<= 15 ms")
            table.add("flows", "\(handler) invocation, median (100k users)", format(largeTimes[handler]!) + " ms")
            table.add("flows", "\(handler) 100k / small", format(largeTimes[handler]! / smallTimes[handler]!) + "x", target: "<= 1.5x")
        }
    }
}
