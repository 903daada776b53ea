import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Issue 41's request budgets, counted as `RequestCountTests` counts the others: a sign-in of a
/// user with a factor (the link's GetItem, the user's Query, which reads the factor too, and the
/// challenge's PutItem) and the challenge that completes it (the user's Query with the challenge,
/// the session opening's Query, one transaction): 3 each, on both backends.
@Suite(.serialized) struct MFARequestCountTests {
    static func expectBudgets(world: FlowWorld, _ request: (String, [String: JSONValue]) throws -> (JSONValue, [String])) throws {
        let idToken = JSONValue.string(world.googleToken(subject: "counted-mfa", email: "counted-mfa@example.com"))
        let (signedIn, _) = try request("signin", ["provider": "google", "idToken": idToken])
        let accessToken = try #require(signedIn["tokens"]?["accessToken"], "\(signedIn)")
        let (enrolment, _) = try request("mfa", ["action": "totp-enroll", "accessToken": accessToken])
        let secret = try #require(enrolment["secret"]?.stringValue, "\(enrolment)")
        let code = { (offset: Int64) in JSONValue.string(AuthenticatorApp.code(base32Secret: secret, at: world.now + offset) ?? "") }
        let (confirmed, _) = try request("mfa", ["action": "totp-confirm", "code": code(0), "accessToken": accessToken])
        #expect(confirmed["recoveryCodes"] != nil, "\(confirmed)")

        let (required, pending) = try request("signin", ["provider": "google", "idToken": idToken])
        let mfaToken = try #require(required["error"]?["mfaToken"], "\(required)")
        #expect(pending == ["GetItem", "Query", "PutItem"], "\(world.backend) signin with a factor: \(pending)")
        let (opened, challenge) = try request("mfa", ["action": "challenge", "mfaToken": mfaToken, "code": code(30)])
        #expect(opened["tokens"] != nil, "\(opened)")
        #expect(challenge == ["Query", "Query", "TransactWriteItems"], "\(world.backend) challenge: \(challenge)")
    }

    static let mfaOn = ["AUTH_MFA": "optional", "AUTH_DATA_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="]

    @Test func localStore() throws {
        let world = FlowWorld(MFARequestCountTests.mfaOn)
        let flows = try InProcessFlows(world, refusingQueriesOn: "GSI1")
        _ = try flows.signIn(idToken: world.googleToken(subject: "warm-up", email: "warm-up@example.com"))
        try Self.expectBudgets(world: world) { handler, event in
            _ = flows.table.takeOperations()
            let body: JSONValue
            do {
                body = try flows.handler(HandlerCatalogue.entry(named: handler)!).handle(
                    InvocationRequest(kind: .direct, body: event), context: InvocationContext(requestID: "count", logger: .jsonLines(level: .error))).body
            } catch {
                body = AuthError.from(error).body  // MFA_REQUIRED: its mfaToken is in the body
            }
            return (body, flows.table.takeOperations())
        }
    }

    @Test func dynamoDB() throws {
        let proxy = try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint)
        defer { proxy.stop() }
        var environment = MFARequestCountTests.mfaOn
        environment["AUTH_DYNAMODB_ENDPOINT"] = proxy.endpoint
        let world = try FlowWorld(environment, backend: .dynamoDB)
        world.signIn(token: world.googleToken(subject: "warm-up", email: "warm-up@example.com"))
        try Self.expectBudgets(world: world) { handler, event in try world.countedRun(handler, event, through: proxy) }
    }
}
