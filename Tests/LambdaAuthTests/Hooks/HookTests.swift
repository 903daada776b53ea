@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging
import Testing

/// Contract section 19 end to end: the handlers call a real hook server on 127.0.0.1 whose
/// verifiers nobody here wrote (`standardwebhooks` for URL hooks, botocore's SigV4 signer for the
/// Lambda Invoke API), on both backends.
@Suite(.serialized) struct HookTests {
    enum Kind: String, CaseIterable, CustomStringConvertible {
        case url, lambda
        var description: String { rawValue }
    }

    static let function = "arn:aws:lambda:us-east-1:123456789012:function:app-hooks"

    static func target(_ kind: Kind, _ peer: HookPeer) -> [String: JSONValue] {
        kind == .url ? ["url": .string(peer.url)] : ["lambda": .string(function)]
    }

    /// Every hook of `kind`, with `fields` (timeoutMs, onError) added to each.
    static func hooks(_ kind: Kind, _ peer: HookPeer, _ fields: [String: JSONValue] = [:]) -> JSONValue {
        let hook = JSONValue.object(target(kind, peer).merging(fields) { $1 })
        return ["beforeUserCreated": hook, "beforeSignIn": hook, "accessTokenClaims": hook]
    }

    static func world(_ backend: FlowWorld.Backend) throws -> FlowWorld {
        // A configured key on both backends, so that PyJWT verifies against its JWKS and no dev key
        // is created in the store by the first mint.
        try FlowWorld(backend == .local ? ["AUTH_SIGNING_KEY": AccessTokenKey.generate().pemRepresentation] : [:], backend: backend)
    }

    static func signInEvent(_ world: FlowWorld, subject: String, email: String = "ada@example.org") -> JSONValue {
        ["provider": "google", "idToken": .string(world.googleToken(subject: subject, email: email))]
    }

    @Test(arguments: FlowWorld.Backend.allCases, Kind.allCases)
    func signUpSignInAndRefreshCallTheirHooksAndCarryTheirClaims(backend: FlowWorld.Backend, kind: Kind) throws {
        let peer = try HookPeer()
        let world = try Self.world(backend)
        let environment = peer.environment(hooks: Self.hooks(kind, peer))
        try peer.answer("accessTokenClaims", body: ["claims": ["tenant": "acme", "roles": ["admin", "billing"]]])

        let idToken = world.googleToken(subject: "hooked-1", email: "ada@example.org")
        let first = world.run("signin", ["provider": "google", "idToken": .string(idToken)],
                              environment: environment.merging(["AUTH_METRICS": "emf"]) { $1 })
        let created = try #require(first.responseBody, "\(first.stderrText.suffix(1500))")
        #expect(created["isNewUser"] == true, "\(created.serialized())")
        let userID = try #require(created["user"]?["id"]?.stringValue)
        var requests = try peer.requests()
        #expect(requests.map { $0["hook"]?.stringValue } == ["beforeUserCreated", "accessTokenClaims"])
        for request in requests {
            #expect(request["verified"] == true, "\(request.serialized())")
            #expect(request["kind"]?.stringValue == kind.rawValue)
            // No token, code or secret is ever sent.
            #expect(!request.serialized().contains(idToken), "\(request.serialized())")
            if kind == .lambda {
                #expect(request["invocationType"] == "RequestResponse")
                #expect(request["function"]?.stringValue == SigV4.uriEncode(Self.function))
            } else {
                #expect(request["webhookId"] == request["payload"]?["id"], "webhook-id equals the payload's id")
            }
        }
        let creation = try #require(requests.first?["payload"])
        #expect(creation["user"]?.isNull == true && creation["session"]?.isNull == true)
        #expect(creation["provider"] == "google" && creation["identity"]?["subject"] == "hooked-1")
        #expect(creation["identity"]?["email"] == "ada@example.org" && creation["requestId"]?.stringValue?.isEmpty == false)
        #expect(requests.last?["payload"]?["session"]?["id"] == created["session"]?["id"])
        #expect(requests.last?["payload"]?["user"]?["id"]?.stringValue == userID)
        #expect(first.stderrText.contains(#""hook":"beforeUserCreated,accessTokenClaims""#), "the event line names the hooks called")
        #expect(first.stderrText.contains(#""hookMs":"#))
        #expect(first.stderrText.contains(#"{"Name":"hookDuration","Unit":"Milliseconds"}"#) && first.stderrText.contains(#""hookDuration":"#),
                "the EMF line carries hookDuration")

        let again = try #require(world.run("signin", ["provider": "google", "idToken": .string(idToken)], environment: environment).responseBody)
        #expect(again["isNewUser"] == false, "\(again.serialized())")
        requests = try peer.requests()
        #expect(requests.map { $0["hook"]?.stringValue } == ["beforeSignIn", "accessTokenClaims"])
        #expect(requests.first?["payload"]?["user"]?["id"]?.stringValue == userID)
        #expect(requests.allSatisfy { $0["verified"] == true })

        let refreshToken = try #require(again["tokens"]?["refreshToken"]?.stringValue)
        let refreshed = try #require(world.run("refresh", ["refreshToken": .string(refreshToken)], environment: environment).responseBody)
        // The same token again within the grace period: the live token again, and a token with claims.
        let replayed = try #require(world.run("refresh", ["refreshToken": .string(refreshToken)], environment: environment).responseBody)
        #expect(refreshed["tokens"]?["refreshToken"] != nil && replayed["tokens"]?["refreshToken"] == refreshed["tokens"]?["refreshToken"],
                "\(refreshed.serialized()) \(replayed.serialized())")
        requests = try peer.requests()
        #expect(requests.map { $0["hook"]?.stringValue } == ["accessTokenClaims", "accessTokenClaims"])
        #expect(requests.allSatisfy { $0["payload"]?["identity"]?.isNull == true && $0["payload"]?["user"]?["id"]?.stringValue == userID })
        #expect(requests.allSatisfy { $0["verified"] == true && !$0.serialized().contains(refreshToken) })

        let configuration = try AuthConfiguration.fromEnvironment(world.environment)
        let jwks = try #require(configuration.signingKeys?.jwks)
        let tokens = try [created, again, refreshed, replayed].map { try #require($0["tokens"]?["accessToken"]?.stringValue) }
        let claims = try peer.decode(tokens, jwks: jwks, audience: configuration.accessTokenAudience)
        #expect(claims.count == 4)
        for token in claims {
            #expect(token["tenant"] == "acme" && token["roles"] == ["admin", "billing"], "\(token.serialized())")
            #expect(token["sub"]?.stringValue == userID, "a hook never replaces our claims")
        }
    }

    /// Each way a hook can refuse or fail, under `onError: "deny"`: the contract's answer, and the
    /// store exactly as it was; under `"allow"` the same failure lets the request through.
    @Test(arguments: FlowWorld.Backend.allCases)
    func denialsAndFailuresLeaveTheStoreAsItWas(backend: FlowWorld.Backend) throws {
        let peer = try HookPeer()
        let world = try Self.world(backend)
        // An existing user, signed in without hooks, for beforeSignIn and refresh.
        let existing = try #require(world.run("signin", Self.signInEvent(world, subject: "existing")).responseBody)
        let refreshToken = try #require(existing["tokens"]?["refreshToken"]?.stringValue)

        struct Case {
            var name: String
            var hook: String
            var kind: Kind = .url
            var answer: (HookPeer) throws -> Void
            var event: JSONValue
            var handler = "signin"
            var expected: String
            var message: String? = nil
            var fields: [String: JSONValue] = [:]
            var url: String? = nil
        }
        // A new subject and email per case: a case's sign-up allowed under `allow` must not make
        // the next case's newcomer a returning user (nor one joined by verified email).
        func newUser(_ name: String) -> JSONValue {
            Self.signInEvent(world, subject: "newcomer " + name, email: name.filter(\.isLetter) + "@elsewhere.example")
        }
        let returning = Self.signInEvent(world, subject: "existing")
        let cases: [Case] = [
            Case(name: "sign-up denied", hook: "beforeUserCreated",
                 answer: { try $0.answer("beforeUserCreated", body: ["decision": "deny", "message": "only example.org signs up"]) },
                 event: newUser("sign-up denied"), expected: "HOOK_DENIED", message: "only example.org signs up"),
            Case(name: "guest denied", hook: "beforeUserCreated", answer: { try $0.answer("beforeUserCreated", body: ["decision": "deny"]) },
                 event: ["provider": "guest"], expected: "HOOK_DENIED", message: "this sign-up is not allowed"),
            Case(name: "sign-in denied", hook: "beforeSignIn", kind: .lambda,
                 answer: { try $0.answer("beforeSignIn", body: ["decision": "deny", "message": "banned"]) },
                 event: returning, expected: "HOOK_DENIED", message: "banned"),
            Case(name: "HTTP 500", hook: "beforeUserCreated", answer: { try $0.answer("beforeUserCreated", status: 500, body: ["decision": "allow"]) },
                 event: newUser("HTTP 500"), expected: "HOOK_UNAVAILABLE"),
            Case(name: "a redirect", hook: "beforeSignIn", answer: { try $0.answer("beforeSignIn", status: 307, body: ["decision": "allow"]) },
                 event: returning, expected: "HOOK_UNAVAILABLE"),
            Case(name: "not JSON", hook: "beforeSignIn", answer: { try $0.answer("beforeSignIn", raw: "allow") },
                 event: returning, expected: "HOOK_UNAVAILABLE"),
            Case(name: "no decision", hook: "beforeUserCreated", kind: .lambda, answer: { try $0.answer("beforeUserCreated", body: ["ok": true]) },
                 event: newUser("no decision"), expected: "HOOK_UNAVAILABLE"),
            Case(name: "over 16 KiB", hook: "beforeUserCreated",
                 answer: { try $0.answer("beforeUserCreated", body: ["decision": "allow", "padding": .string(String(repeating: "x", count: 17_000))]) },
                 event: newUser("over 16 KiB"), expected: "HOOK_UNAVAILABLE"),
            Case(name: "a reserved claim", hook: "accessTokenClaims",
                 answer: { try $0.answer("accessTokenClaims", body: ["claims": ["sub": "someone-else"]]) },
                 event: newUser("a reserved claim"), expected: "HOOK_UNAVAILABLE"),
            Case(name: "claims over 2048 bytes", hook: "accessTokenClaims",
                 answer: { try $0.answer("accessTokenClaims", body: ["claims": ["blob": .string(String(repeating: "y", count: 2100))]]) },
                 event: returning, expected: "HOOK_UNAVAILABLE"),
            Case(name: "a function error", hook: "accessTokenClaims", kind: .lambda,
                 answer: { try $0.answer("accessTokenClaims", body: ["claims": ["tenant": "acme"]], functionError: "Unhandled") },
                 event: newUser("a function error"), expected: "HOOK_UNAVAILABLE"),
            Case(name: "a slow hook", hook: "beforeUserCreated",
                 answer: { try $0.answer("beforeUserCreated", body: ["decision": "allow"], delayMilliseconds: 1500) },
                 event: newUser("a slow hook"), expected: "HOOK_UNAVAILABLE", fields: ["timeoutMs": 200]),
            Case(name: "a refused connection", hook: "beforeSignIn", answer: { _ in }, event: returning, expected: "HOOK_UNAVAILABLE",
                 url: "http://127.0.0.1:9/hook"),
            Case(name: "refresh: claims fail", hook: "accessTokenClaims", answer: { try $0.answer("accessTokenClaims", status: 502, body: [:]) },
                 event: ["refreshToken": .string(refreshToken)], handler: "refresh", expected: "HOOK_UNAVAILABLE"),
        ]
        for testCase in cases {
            try testCase.answer(peer)
            for policy in ["deny", "allow"] {
                var target = Self.target(testCase.kind, peer)
                if let url = testCase.url { target = ["url": .string(url)] }
                let hooks: JSONValue = [testCase.hook: .object(target.merging(testCase.fields) { $1 }.merging(["onError": .string(policy)]) { $1 })]
                let environment = peer.environment(hooks: hooks).merging(["AUTH_GUEST": "on"]) { $1 }
                let before = try world.storeState()
                let started = monotonicSeconds()
                let output = world.run(testCase.handler, testCase.event, environment: environment)
                let elapsed = monotonicSeconds() - started
                let body = try #require(output.responseBody, "\(testCase.name): \(output.stderrText.suffix(1500))")
                if testCase.expected == "HOOK_DENIED" || policy == "deny" {
                    #expect(body["error"]?["code"]?.stringValue == testCase.expected, "\(testCase.name), \(policy): \(body.serialized())")
                    #expect(body["error"]?["retryable"] == .bool(testCase.expected == "HOOK_UNAVAILABLE"), "\(testCase.name)")
                    #expect(body["error"]?["status"] == .number(testCase.expected == "HOOK_DENIED" ? 403 : 503), "\(testCase.name)")
                    if let message = testCase.message { #expect(body["error"]?["message"]?.stringValue == message, "\(testCase.name)") }
                    #expect(try world.storeState() == before, "\(testCase.name), \(policy): the store changed")
                    #expect(output.stderrText.contains(#""hook":""#), "\(testCase.name): the event line names the hook")
                    if testCase.expected == "HOOK_UNAVAILABLE" {
                        #expect(output.stderrText.contains("a hook failed") && output.stderrText.contains(#""reason":"#),
                                "\(testCase.name): the log says which hook and why")
                    }
                } else {
                    #expect(body["error"] == nil, "\(testCase.name), allow: \(body.serialized())")
                }
                if testCase.name == "a slow hook" { #expect(elapsed < 1.2, "the 200 ms timeout held: \(elapsed) s") }
                _ = try peer.requests()
            }
        }
    }

    /// `authctl hooks test TYPE` reaches the hook as the handlers do (the peer verifies it) and says
    /// whether its answer is valid, exiting 1 when it is not.
    @Test func authctlSendsASamplePayloadAndJudgesTheAnswer() throws {
        let peer = try HookPeer()
        let environment = Environment.current().merging(peer.environment(hooks: [
            "beforeSignIn": ["url": .string(peer.url)], "accessTokenClaims": ["lambda": .string(Self.function)],
        ])) { $1 }
        try peer.answer("beforeSignIn", body: ["decision": "deny", "message": "banned"])
        let denied = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["hooks", "test", "beforeSignIn"],
                                           environment: environment)
        #expect(denied.exitCode == 0 && denied.stdoutText.contains("valid: deny: banned"), "\(denied.stdoutText) \(denied.stderrText)")
        try peer.answer("accessTokenClaims", body: ["claims": ["aud": "elsewhere"]])
        let reserved = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["hooks", "test", "accessTokenClaims"],
                                             environment: environment)
        #expect(reserved.exitCode == 1 && reserved.stdoutText.contains("invalid: its claims name the reserved claim aud"),
                "\(reserved.stdoutText) \(reserved.stderrText)")
        let requests = try peer.requests()
        #expect(requests.count == 2 && requests.allSatisfy { $0["verified"] == true }, "\(requests)")
        #expect(requests.first?["payload"]?["user"]?["id"] == "sample-user")
    }

    /// The hooks of one request share its time: with 0.8 s left, a hook allowed 5 s and answering
    /// after 3 s is given up at the deadline minus 250 ms, and the answer still goes out in time.
    @Test func aSlowHookIsCutAtTheInvocationDeadline() throws {
        let peer = try HookPeer()
        let world = try Self.world(.local)
        try peer.answer("beforeUserCreated", body: ["decision": "allow"], delayMilliseconds: 3000)
        let environment = world.environment.merging(peer.environment(hooks: ["beforeUserCreated": ["url": .string(peer.url), "timeoutMs": 5000]])) { $1 }
        let services = try AuthServices(configuration: try AuthConfiguration.fromEnvironment(environment), logger: Logger.jsonLines(level: .error))
        let handler = try HandlerCatalogue.signin.compose(services)
        let context = InvocationContext(requestID: "deadline", logger: Logger.jsonLines(level: .error),
                                        deadlineMilliseconds: Int64((SystemClock().now() + 0.8) * 1000))
        let started = monotonicSeconds()
        let response = try HandlerMain.respond(to: InvocationRequest(kind: .direct, body: Self.signInEvent(world, subject: "late").objectValue!),
                                               context: context, testMode: true) { handler }
        let elapsed = monotonicSeconds() - started
        #expect(response.body["error"]?["code"] == "HOOK_UNAVAILABLE", "\(response.body.serialized())")
        #expect(elapsed < 0.75, "answered \(elapsed) s after a 0.8 s deadline was set")
        #expect(context.hooks.names == "beforeUserCreated")
    }

    /// An email code is spent only once the hooks let the sign-in go on: a refused or failed
    /// sign-in leaves the store as it was, the code included, and the same code then signs in.
    @Test(arguments: FlowWorld.Backend.allCases)
    func anEmailCodeSignInRefusedByAHookKeepsItsCode(backend: FlowWorld.Backend) throws {
        let peer = try HookPeer()
        let world = try Self.world(backend)
        let email = EmailCodeWorld.environment(world.directory)
        let address = "coder@elsewhere.example"
        func code() throws -> String {
            let started = world.run("otp-start", ["email": .string(address)], environment: email)
            #expect(started.responseBody?["error"] == nil, "\(started.stderrText.suffix(800))")
            return try #require(Outbox.latestCode(to: address, in: world.directory + "/outbox"))
        }
        func signIn(_ code: String, hooks: JSONValue?) throws -> JSONValue {
            let environment = hooks.map { email.merging(peer.environment(hooks: $0)) { $1 } } ?? email
            let output = world.run("signin", ["provider": "email", "email": .string(address), "code": .string(code)], environment: environment)
            return try #require(output.responseBody, "\(output.stderrText.suffix(1500))")
        }
        let hook: JSONValue = ["url": .string(peer.url)]

        let first = try code()
        try peer.answer("beforeUserCreated", body: ["decision": "deny", "message": "not yet"])
        var before = try world.storeState()
        #expect(try signIn(first, hooks: ["beforeUserCreated": hook])["error"]?["code"] == "HOOK_DENIED")
        #expect(try world.storeState() == before, "a denied sign-up spent its code")
        let created = try signIn(first, hooks: nil)
        #expect(created["isNewUser"] == true, "the code survived the denial: \(created.serialized())")

        let second = try code()
        try peer.answer("beforeSignIn", body: ["decision": "deny"])
        try peer.answer("accessTokenClaims", status: 500, body: [:])
        for (hooks, expected) in [(["beforeSignIn": hook] as JSONValue, "HOOK_DENIED"), (["accessTokenClaims": hook], "HOOK_UNAVAILABLE")] {
            before = try world.storeState()
            #expect(try signIn(second, hooks: hooks)["error"]?["code"]?.stringValue == expected)
            #expect(try world.storeState() == before, "\(expected) spent the code")
        }
        let returning = try signIn(second, hooks: nil)
        #expect(returning["isNewUser"] == false && returning["user"]?["id"] == created["user"]?["id"], "\(returning.serialized())")
        #expect(try signIn(second, hooks: nil)["error"]?["code"] == "OTP_EXPIRED", "a code signs in once")
    }
}
