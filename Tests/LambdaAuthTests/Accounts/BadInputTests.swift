import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Malformed events and tokens of every kind: each gets the contract's error JSON with exit
/// status 0, and the store's files are byte-identical afterwards.
@Suite struct BadInputTests {
    struct Case: Sendable {
        let name: String
        let handler: String
        let event: [UInt8]
        /// nil: any contract code is acceptable (several checks could fire first).
        let expected: ErrorCode?
        /// Variables this case needs beyond the world's (guests or email codes on).
        var environment: [String: String] = [:]
    }

    /// Guests and email codes on, so that their refusals are reached (the key given, so that no
    /// refused request creates a dev key in the store).
    static let guestsAndCodes = ["AUTH_GUEST": "on", "AUTH_EMAIL": "on", "AUTH_OTP_KEY": EmailCodeWorld.otpKey]

    static func cases(_ world: FlowWorld, accessToken: String) -> [Case] {
        var cases: [Case] = []
        func add(_ name: String, _ handler: String, _ event: JSONValue, _ expected: ErrorCode?, environment: [String: String] = [:]) {
            cases.append(Case(name: name, handler: handler, event: event.serializedBytes(), expected: expected, environment: environment))
        }
        func raw(_ name: String, _ handler: String, _ text: String, _ expected: ErrorCode?) {
            cases.append(Case(name: name, handler: handler, event: Array(text.utf8), expected: expected))
        }
        func http(_ body: String, method: String = "POST", base64: JSONValue = false, headers: JSONValue = ["content-type": "application/json"],
                  sourceIP: JSONValue? = nil) -> JSONValue {
            var context: [String: JSONValue] = ["method": .string(method), "path": "/auth"]
            if let sourceIP { context["sourceIp"] = sourceIP }
            return ["version": "2.0", "headers": headers, "requestContext": ["http": .object(context)],
                    "body": .string(body), "isBase64Encoded": base64]
        }

        // Broken events, for every handler.
        for handler in HandlerNames.all {
            raw("empty event", handler, "", .invalidRequest)
            raw("broken JSON", handler, "{not json", .invalidRequest)
            raw("truncated JSON", handler, #"{"provider": "google", "idToken": "abc"#, .invalidRequest)
            raw("array event", handler, "[1,2,3]", .invalidRequest)
            raw("string event", handler, #""hello""#, .invalidRequest)
            raw("number event", handler, "42", .invalidRequest)
            raw("null event", handler, "null", .invalidRequest)
            raw("duplicate members", handler, #"{"provider": "google", "provider": "apple"}"#, .invalidRequest)
            raw("deep nesting", handler, String(repeating: "[", count: 5000), .invalidRequest)
            raw("lone surrogate escape", handler, #"{"a": "\ud800"}"#, .invalidRequest)
            cases.append(Case(name: "raw invalid UTF-8 bytes", handler: handler, event: [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D], expected: .invalidRequest))
            add("huge direct event", handler, ["padding": .string(String(repeating: "x", count: 70_000))], .invalidRequest)
            add("huge HTTP body", handler, http(String(repeating: "y", count: 70_000)), .invalidRequest)
            add("HTTP body not JSON", handler, http("provider=google"), .invalidRequest)
            add("HTTP body an array", handler, http("[]"), .invalidRequest)
            add("invalid base64 body", handler, http("!!!not base64!!!", base64: true), .invalidRequest)
            add("base64 of garbage", handler, http(Base64.encoded(Array("{garbage".utf8)), base64: true), .invalidRequest)
            add("HTTP body a number", handler, ["version": "2.0", "requestContext": ["http": ["method": "POST"]], "body": 12], .invalidRequest)
        }

        // signin: fields.
        let good = world.googleToken(subject: "bad-input-user")
        add("no provider", "signin", ["idToken": .string(good)], .invalidRequest)
        add("no idToken", "signin", ["provider": "google"], .invalidRequest)
        add("provider a number", "signin", ["provider": 7, "idToken": .string(good)], .invalidRequest)
        add("provider null", "signin", ["provider": nil, "idToken": .string(good)], .invalidRequest)
        add("provider an object", "signin", ["provider": ["name": "google"], "idToken": .string(good)], .invalidRequest)
        add("idToken a number", "signin", ["provider": "google", "idToken": 1], .invalidRequest)
        add("idToken an array", "signin", ["provider": "google", "idToken": [.string(good)]], .invalidRequest)
        add("idToken empty", "signin", ["provider": "google", "idToken": ""], .invalidRequest)
        add("idToken over 16 KiB", "signin", ["provider": "google", "idToken": .string(String(repeating: "a", count: 17_000))], .invalidRequest)
        add("nonce a number", "signin", ["provider": "google", "idToken": .string(good), "nonce": 5], .invalidRequest)
        add("device a string", "signin", ["provider": "google", "idToken": .string(good), "device": "iphone"], .invalidRequest)
        add("device.id a number", "signin", ["provider": "google", "idToken": .string(good), "device": ["id": 5]], .invalidRequest)
        add("profile a string", "signin", ["provider": "google", "idToken": .string(good), "profile": "Ada"], .invalidRequest)
        add("profile.name an array", "signin", ["provider": "google", "idToken": .string(good), "profile": ["name": ["Ada"]]], .invalidRequest)
        add("unknown provider", "signin", ["provider": "facebook", "idToken": .string(good)], .unsupportedProvider)
        add("provider in capitals", "signin", ["provider": "Google", "idToken": .string(good)], .unsupportedProvider)
        add("GET method", "signin", http(#"{"provider":"google","idToken":"x"}"#, method: "GET"), .invalidRequest)

        // signin: tokens.
        let claims = world.google.claims(.google, audience: TestIssuer.googleAudience, subject: "bad-input-user")
        func token(_ name: String, _ value: String, _ expected: ErrorCode?) {
            add(name, "signin", ["provider": "google", "idToken": .string(value)], expected)
        }
        let parts = good.split(separator: ".").map(String.init)
        token("one part", "abc", .malformedToken)
        token("two parts", "abc.def", .malformedToken)
        token("four parts", good + ".x", .malformedToken)
        token("empty parts", "..", .malformedToken)
        token("invalid base64 header", "!!!." + parts[1] + "." + parts[2], .malformedToken)
        token("padded base64", parts[0] + "=." + parts[1] + "." + parts[2], .malformedToken)
        token("standard-alphabet base64", parts[0] + "." + parts[1] + "+/." + parts[2], .malformedToken)
        token("header not JSON", TokenForge.part("not json") + "." + parts[1] + "." + parts[2], .malformedToken)
        token("header an array", TokenForge.part("[]") + "." + parts[1] + "." + parts[2], .malformedToken)
        token("payload not JSON", parts[0] + "." + TokenForge.part("{") + "." + parts[2], .malformedToken)
        token("duplicate header members",
              world.google.token(headerJSON: #"{"alg":"RS256","kid":"google-key-1","kid":"other"}"#, payloadJSON: claims.jsonText), .malformedToken)
        token("duplicate payload members",
              world.google.token(headerJSON: #"{"alg":"RS256","kid":"google-key-1"}"#,
                                 payloadJSON: String(claims.jsonText.dropLast()) + #","sub":"someone-else"}"#), .malformedToken)
        token("alg none", TokenForge.token(header: ["alg": "none", "kid": "google-key-1"], payload: .object(claims), signature: []), .unsupportedAlgorithm)
        token("alg HS256", TokenForge.token(header: ["alg": "HS256", "kid": "google-key-1"], payload: .object(claims), signature: [1, 2, 3]), .unsupportedAlgorithm)
        token("alg RS512", TokenForge.token(header: ["alg": "RS512", "kid": "google-key-1"], payload: .object(claims), signature: [UInt8](repeating: 7, count: 256)), .unsupportedAlgorithm)
        token("alg ES256", TokenForge.token(header: ["alg": "ES256", "kid": "google-key-1"], payload: .object(claims), signature: [UInt8](repeating: 1, count: 64)), .unsupportedAlgorithm)
        token("crit header", world.google.token(claims, header: ["crit": ["exp"]]), .unsupportedAlgorithm)
        token("no kid", TokenForge.token(header: ["alg": "RS256"], payload: .object(claims), signature: [1]), .unknownKeyID)
        token("unknown kid", world.google.token(claims, keyID: "no-such-key"), .unknownKeyID)
        token("jku pointing elsewhere", world.google.token(claims, header: ["jku": "https://evil.example/keys"], keyID: "evil-key"), .unknownKeyID)
        token("embedded jwk", world.google.token(claims, header: ["jwk": world.apple.jwk], keyID: "apple-key-1"), .unknownKeyID)
        token("tampered payload", parts[0] + "." + TokenForge.part(JSONValue.object(claims.merging(["sub": "admin"]) { $1 }).serialized()) + "." + parts[2], .invalidSignature)
        token("signature of another token", parts[0] + "." + parts[1] + "." + world.googleToken(subject: "someone").split(separator: ".")[2], .invalidSignature)
        token("truncated signature", parts[0] + "." + parts[1] + "." + String(parts[2].dropLast(2)), .invalidSignature)
        token("signed by Apple's key as Google's", world.apple.token(claims, keyID: "google-key-1"), .invalidSignature)
        token("empty signature", parts[0] + "." + parts[1] + ".", .invalidSignature)
        token("wrong issuer", world.googleToken(subject: "x", changes: ["iss": "https://evil.example"]), .invalidIssuer)
        token("Apple's issuer for Google", world.googleToken(subject: "x", changes: ["iss": "https://appleid.apple.com"]), .invalidIssuer)
        token("no issuer", world.googleToken(subject: "x", changes: ["iss": nil]), .invalidIssuer)
        token("wrong audience", world.googleToken(subject: "x", changes: ["aud": "someone-else"]), .invalidAudience)
        token("audience array without ours", world.googleToken(subject: "x", changes: ["aud": ["a", "b"]]), .invalidAudience)
        token("audience a number", world.googleToken(subject: "x", changes: ["aud": 5]), .invalidAudience)
        token("expired", world.googleToken(subject: "x", changes: ["exp": .number(world.now - 3600)]), .tokenExpired)
        token("no exp", world.googleToken(subject: "x", changes: ["exp": nil]), .tokenExpired)
        token("exp a string", world.googleToken(subject: "x", changes: ["exp": "tomorrow"]), nil)
        token("issued in the future", world.googleToken(subject: "x", changes: ["iat": .number(world.now + 3600)]), .tokenNotYetValid)
        token("not before the future", world.googleToken(subject: "x", changes: ["nbf": .number(world.now + 3600)]), .tokenNotYetValid)
        token("nonce in token, none in request", world.googleToken(subject: "x", changes: ["nonce": "abc"]), .nonceRequired)
        add("nonce mismatch", "signin", ["provider": "google", "nonce": "n1", "idToken": .string(world.googleToken(subject: "x", changes: ["nonce": "n2"]))], .nonceMismatch)
        add("Apple token for Google", "signin", ["provider": "google", "idToken": .string(world.appleToken(subject: "x"))], nil)
        token("no subject", world.googleToken(subject: "x", changes: ["sub": nil]), nil)
        token("subject a number", world.googleToken(subject: "x", changes: ["sub": 42]), nil)
        // Key parts DynamoDB could not store (its 2,048-byte partition key) are refused alike on both backends.
        token("subject of 1,025 bytes", world.googleToken(subject: String(repeating: "s", count: 1025)), .malformedToken)
        token("subject of 3,000 bytes", world.googleToken(subject: String(repeating: "\u{E9}", count: 1500)), .malformedToken)
        token("email of 1,025 bytes", world.googleToken(subject: "long-email", email: String(repeating: "e", count: 1013) + "@example.com"), .malformedToken)

        // signin: what must never be guessed at (contract section 13).
        add("guest with an idToken", "signin", ["provider": "guest", "idToken": .string(good)], .invalidRequest, environment: guestsAndCodes)
        add("guest with a null idToken", "signin", ["provider": "guest", "idToken": nil], .invalidRequest, environment: guestsAndCodes)
        add("guest with an authorizationCode", "signin", ["provider": "guest", "authorizationCode": "c"], .invalidRequest, environment: guestsAndCodes)
        add("Apple with an empty authorizationCode", "signin",
            ["provider": "apple", "idToken": .string(world.appleToken(subject: "000777.empty-code")), "authorizationCode": ""], .invalidRequest)
        for mistyped in ["Guest", "anonymous", "GUEST", "guest ", "Email"] {
            add("provider \(mistyped) without a token", "signin", ["provider": .string(mistyped)], .unsupportedProvider, environment: guestsAndCodes)
        }
        let guestBody = #"{"provider":"guest"}"#
        let unusableSourceIPs: [(String, JSONValue?)] = [
            ("missing", nil), ("empty", ""), ("a number", 7), ("null", .null), ("an object", ["ip": "1.2.3.4"]),
            ("a name", "localhost"), ("three parts", "10.0.0"), ("a leading zero", "010.0.0.1"), ("an octet over 255", "10.0.0.256"),
            ("hex IPv4", "0x7f.0.0.1"), ("a zone", "fe80::1%eth0"), ("two ::", "1::2::3"), ("a 5-digit group", "12345::1"),
            ("a trailing NUL", "10.0.0.1\u{0}x"), ("spaces", " 10.0.0.1"), ("a CIDR", "10.0.0.0/8"), ("nine groups", "1:2:3:4:5:6:7:8:9"),
        ]
        for (name, sourceIP) in unusableSourceIPs {
            add("guest over HTTP, source IP \(name)", "signin", http(guestBody, sourceIP: sourceIP), .invalidRequest, environment: guestsAndCodes)
            add("otp-start over HTTP, source IP \(name)", "otp-start", http(#"{"email":"ip@example.com"}"#, sourceIP: sourceIP), .invalidRequest,
                environment: guestsAndCodes)
        }
        add("guest over REST API without identity.sourceIp", "signin",
            ["httpMethod": "POST", "path": "/auth/signin", "requestContext": ["identity": [:]], "body": .string(guestBody)], .invalidRequest,
            environment: guestsAndCodes)

        // Email addresses with characters that Unicode lowercasing folds into ASCII ones.
        for (name, folding, _) in TestAddresses.folding {
            let address = "\(folding)@example.com"
            add("otp-start for an address with \(name)", "otp-start", ["email": .string(address)], .invalidRequest, environment: guestsAndCodes)
            add("email sign-in for an address with \(name)", "signin", ["provider": "email", "email": .string(address), "code": "123456"],
                .invalidRequest, environment: guestsAndCodes)
        }

        // refresh.
        add("no refresh token", "refresh", [:], .invalidRequest)
        add("refresh token a number", "refresh", ["refreshToken": 1], .invalidRequest)
        add("refresh token null", "refresh", ["refreshToken": nil], .invalidRequest)
        add("refresh token an object", "refresh", ["refreshToken": ["a": 1]], .invalidRequest)
        add("refresh token empty", "refresh", ["refreshToken": ""], .invalidRequest)
        add("refresh token huge", "refresh", ["refreshToken": .string(String(repeating: "r", count: 5000))], .invalidRequest)
        add("unknown refresh token", "refresh", ["refreshToken": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], .refreshTokenNotFound)
        add("an ID token as refresh token", "refresh", ["refreshToken": .string(good)], .refreshTokenNotFound)
        add("an access token as refresh token", "refresh", ["refreshToken": .string(accessToken)], .refreshTokenNotFound)
        add("refresh with GET", "refresh", http(#"{"refreshToken":"x"}"#, method: "GET"), .invalidRequest)

        // link-provider.
        let apple = world.appleToken(subject: "000777.bad.1")
        func link(_ name: String, _ event: JSONValue, _ expected: ErrorCode?) { add(name, "link-provider", event, expected) }
        link("no access token", ["provider": "apple", "idToken": .string(apple)], .accessTokenInvalid)
        link("access token a number", ["provider": "apple", "idToken": .string(apple), "accessToken": 5], .accessTokenInvalid)
        link("access token garbage", ["provider": "apple", "idToken": .string(apple), "accessToken": "garbage"], .accessTokenInvalid)
        link("ID token as access token", ["provider": "apple", "idToken": .string(apple), "accessToken": .string(good)], .accessTokenInvalid)
        let atParts = accessToken.split(separator: ".").map(String.init)
        link("tampered access token", ["provider": "apple", "idToken": .string(apple),
                                       "accessToken": .string(atParts[0] + "." + TokenForge.part(#"{"sub":"admin","sid":"x","exp":9999999999}"#) + "." + atParts[2])], .accessTokenInvalid)
        link("expired access token", ["provider": "apple", "idToken": .string(apple), "accessToken": .string(accessToken)], nil)
        link("no Authorization header", http(#"{"provider":"apple","idToken":"\#(apple)"}"#), .accessTokenInvalid)
        link("Basic authorization", http(#"{"provider":"apple"}"#, headers: ["authorization": "Basic dXNlcjpwYXNz"]), .accessTokenInvalid)
        link("Bearer without token", http(#"{"provider":"apple"}"#, headers: ["authorization": "Bearer"]), .accessTokenInvalid)
        link("no provider", ["idToken": .string(apple), "accessToken": .string(accessToken)], .invalidRequest)
        link("unknown provider", ["provider": "github", "idToken": .string(apple), "accessToken": .string(accessToken)], .unsupportedProvider)
        link("no ID token", ["provider": "apple", "accessToken": .string(accessToken)], .invalidRequest)
        link("bad action", ["provider": "apple", "action": "merge", "idToken": .string(apple), "accessToken": .string(accessToken)], .invalidRequest)
        link("action a number", ["provider": "apple", "action": 1, "accessToken": .string(accessToken)], .invalidRequest)
        link("PUT method", http(#"{"provider":"apple"}"#, method: "PUT", headers: ["authorization": .string("Bearer " + accessToken)]), .invalidRequest)
        link("forged Apple token", ["provider": "apple", "idToken": .string(world.google.token(world.apple.claims(.apple, audience: TestIssuer.appleAudience), keyID: "apple-key-1")),
                                    "accessToken": .string(accessToken)], .invalidSignature)
        link("expired Apple token", ["provider": "apple", "accessToken": .string(accessToken),
                                     "idToken": .string(world.appleToken(subject: "x", changes: ["exp": .number(world.now - 600)]))], .tokenExpired)
        return cases
    }

    @Test func malformedInputNeverCrashesAndLeavesTheStoreUntouched() throws {
        let world = FlowWorld()
        let signedIn = world.signIn(token: world.googleToken(subject: "bad-input-user"))
        let accessToken = try #require(signedIn["tokens"]?["accessToken"]?.stringValue)
        let cases = BadInputTests.cases(world, accessToken: accessToken)
        #expect(cases.count >= 100)
        let before = world.storeSnapshot()
        #expect(!before.isEmpty)

        // Eight at a time: parallel enough to be quick, few enough for two cores.
        let outputs = stride(from: 0, to: cases.count, by: 8).flatMap { start in
            runSimultaneously(min(8, cases.count - start)) { offset in
                let testCase = cases[start + offset]
                // The expired-access-token case moves the clock past the token's lifetime.
                let environment = testCase.name == "expired access token" ? ["AUTH_NOW": String(world.now + 3600)] : testCase.environment
                return world.run(testCase.handler, raw: testCase.event, environment: environment)
            }
        }
        for (testCase, output) in zip(cases, outputs) {
            let label = "\(testCase.handler): \(testCase.name)"
            #expect(output.exitCode == 0, "\(label) exited \(output.exitCode) \(output.signal.map { "signal \($0)" } ?? "")")
            guard let body = output.responseBody, let error = body["error"] else {
                Issue.record("\(label): no contract error, got \(output.stdoutText.prefix(300))")
                continue
            }
            let code = error["code"]?.stringValue.flatMap(ErrorCode.init(rawValue:))
            #expect(code != nil, "\(label): unknown code \(error)")
            #expect(error["status"]?.int64Value == code.map { Int64($0.status) }, "\(label)")
            #expect(error["message"]?.stringValue?.isEmpty == false, "\(label)")
            #expect(error["retryable"]?.boolValue != nil, "\(label)")
            if let expected = testCase.expected {
                #expect(code == expected, "\(label): expected \(expected.rawValue), got \(error)")
            } else {
                #expect(code != .internal, "\(label): \(error)")
            }
        }
        let after = world.storeSnapshot()
        let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
        #expect(changed.isEmpty, "refused requests changed the store: \(changed)")
    }
}

extension [String: JSONValue] {
    var jsonText: String { JSONValue.object(self).serialized() }
}
