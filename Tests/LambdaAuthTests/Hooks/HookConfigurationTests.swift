@testable import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// AUTH_HOOKS: every mistake is a CONFIG_ERROR naming the variable, the hook and the field.
@Suite struct HookConfigurationTests {
    @Test func aValidDocumentReadsAsWritten() throws {
        let hooks = try HookConfiguration.parse(#"""
            {"beforeUserCreated": {"url": "https://hooks.example.com/signup", "timeoutMs": 800, "onError": "allow"},
             "accessTokenClaims": {"lambda": "arn:aws:lambda:eu-west-1:123456789012:function:claims:live"}}
            """#, variable: "AUTH_HOOKS")
        #expect(hooks[.beforeUserCreated] == HookSettings(target: .url("https://hooks.example.com/signup"), timeoutMilliseconds: 800,
                                                          onError: .allow))
        #expect(hooks[.accessTokenClaims] == HookSettings(target: .lambda("arn:aws:lambda:eu-west-1:123456789012:function:claims:live")))
        #expect(hooks[.beforeSignIn] == nil)
        #expect(try HookConfiguration.parse(#"{"beforeSignIn": {"url": "http://127.0.0.1:9000/hook"}}"#, variable: "AUTH_HOOKS").count == 1)
    }

    @Test(arguments: [
        (#"[]"#, "AUTH_HOOKS must be a JSON object"),
        (#"{"afterSignIn": {"url": "https://a.example"}}"#, #"AUTH_HOOKS names "afterSignIn", which is not a hook"#),
        (#"{"beforeSignIn": "https://a.example"}"#, "AUTH_HOOKS beforeSignIn must be an object"),
        (#"{"beforeSignIn": {}}"#, "AUTH_HOOKS beforeSignIn.url or lambda is required"),
        (#"{"beforeSignIn": {"url": "http://hooks.example.com"}}"#, "AUTH_HOOKS beforeSignIn.url must be an https:// URL"),
        (#"{"beforeSignIn": {"url": "https://a.example", "lambda": "f"}}"#, "AUTH_HOOKS beforeSignIn.url and lambda are both set"),
        (#"{"accessTokenClaims": {"lambda": "my function"}}"#, "AUTH_HOOKS accessTokenClaims.lambda must be a function name"),
        (#"{"beforeUserCreated": {"lambda": "f", "timeoutMs": 50}}"#, "AUTH_HOOKS beforeUserCreated.timeoutMs must be a whole number from 100 to 5000"),
        (#"{"beforeUserCreated": {"lambda": "f", "timeoutMs": 6000}}"#, "AUTH_HOOKS beforeUserCreated.timeoutMs must be"),
        (#"{"beforeUserCreated": {"lambda": "f", "onError": "ignore"}}"#, #"AUTH_HOOKS beforeUserCreated.onError must be "deny" or "allow""#),
        (#"{"beforeUserCreated": {"lambda": "f", "retries": 2}}"#, #"AUTH_HOOKS beforeUserCreated."retries" is not a field"#),
    ])
    func mistakesNameTheVariableTheHookAndTheField(document: String, expected: String) {
        do {
            _ = try HookConfiguration.parse(document, variable: "AUTH_HOOKS")
            Issue.record("\(document) was accepted")
        } catch {
            #expect(error.code == .configError)
            #expect(error.message.hasPrefix(expected), "\(error.message)")
        }
    }

    @Test func aURLHookNeedsTheSecretAndOnlyOneFormIsSet() throws {
        let hooks = #"{"beforeSignIn": {"url": "https://hooks.example.com"}}"#
        #expect(throws: AuthError.self) { try AuthConfiguration.fromEnvironment(["AUTH_HOOKS": hooks]) }
        do { _ = try AuthConfiguration.fromEnvironment(["AUTH_HOOKS": hooks]) } catch {
            #expect(error.message == "AUTH_HOOK_SECRET is required with a url hook in AUTH_HOOKS (beforeSignIn)")
        }
        let secret = "whsec_" + Base64.encoded([UInt8](repeating: 1, count: 24))
        #expect(try AuthConfiguration.fromEnvironment(["AUTH_HOOKS": hooks, "AUTH_HOOK_SECRET": secret]).hooks.count == 1)
        do { _ = try AuthConfiguration.fromEnvironment(["AUTH_HOOKS": hooks, "AUTH_HOOKS_FILE": "/nonexistent"]) } catch {
            #expect(error.message == "AUTH_HOOKS and AUTH_HOOKS_FILE are both set; set only one")
        }
    }

    /// Reserved names, sizes and messages, as an answer is checked before anything is taken from it.
    @Test func answersAreCheckedBeforeUse() throws {
        #expect(try HookAnswer.decision(Array(#"{"decision": "deny", "message": "banned"}"#.utf8)) == .deny(message: "banned"))
        #expect(throws: HookAnswer.Invalid.self) {
            try HookAnswer.decision(Array(#"{"decision": "deny", "message": "\#(String(repeating: "m", count: 201))"}"#.utf8))
        }
        for reserved in HookAnswer.reservedClaims {
            #expect(throws: HookAnswer.Invalid.self) { try HookAnswer.claims(Array(#"{"claims": {"\#(reserved)": 1}}"#.utf8)) }
        }
        #expect(try HookAnswer.claims(Array(#"{"claims": {"tenant": "acme"}}"#.utf8)) == ["tenant": "acme"])
        #expect(throws: HookAnswer.Invalid.self) { try HookAnswer.claims(Array(#"{"claims": []}"#.utf8)) }
    }

    /// Standard Webhooks' published example: the signature of their specification's test vector.
    @Test func theSignatureIsStandardWebhooks() throws {
        // From standard-webhooks' reference libraries' tests.
        let secret = try #require(Base64.decoded("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let body = Array(#"{"test": 2432232314}"#.utf8)
        #expect(StandardWebhookSignature.v1(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: "1614265330", body: body, secret: secret)
                == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }
}

/// The samples of Events/hooks read as docs/hooks.md says they do.
@Suite struct HookSampleTests {
    static func sample(_ name: String) throws -> [UInt8] {
        try FileSystem.readFile(TestSupport.packageRoot + "/Events/hooks/" + name)
    }

    @Test func theSamplesAreWhatTheyClaim() throws {
        let configured = try HookConfiguration.fromEnvironment(EnvironmentReader([
            "AUTH_HOOKS_FILE": TestSupport.packageRoot + "/Events/hooks/auth-hooks.json"]))
        #expect(Set(configured.keys) == Set(HookType.allCases))
        #expect(configured[.beforeSignIn]?.onError == .allow)
        #expect(try HookAnswer.decision(try Self.sample("answer-deny.json"))
                == .deny(message: "This account is suspended. Contact support@example.com."))
        #expect(try HookAnswer.claims(try Self.sample("answer-claims.json"))["roles_csv"] == "admin,billing")
        #expect(throws: HookAnswer.Invalid.self) { try HookAnswer.claims(try Self.sample("answer-reserved-claim.json")) }
        let payload = try JSONValue.parse(try Self.sample("payload-beforeSignIn.json"))
        let keys = Set((payload.objectValue ?? [:]).keys)
        #expect(keys == ["type", "id", "time", "requestId", "provider", "identity", "user", "session", "sourceIp", "device"])
        // What the handlers send has the same members.
        let sent = HookTest.sample(.beforeSignIn).json(id: "hook_1", time: 0, request: HookRequest(requestID: "r", sourceIP: "203.0.113.7"))
        #expect(Set((sent.objectValue ?? [:]).keys) == keys)
        #expect(Set((sent["identity"]?.objectValue ?? [:]).keys) == Set((payload["identity"]?.objectValue ?? [:]).keys))
    }
}
