import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Contract section 13: a re-authentication proof for `delete-account` must have been issued
/// (`auth_time` when present, else `iat`) within AUTH_REAUTH_WINDOW (300 s here), with the
/// AUTH_CLOCK_SKEW every time claim gets (60 s). An ID token is valid for an hour, so a
/// 55-minute-old one re-authenticated before.
@Suite(.serialized) struct ReauthenticationFreshnessTests {
    @Test(arguments: FlowWorld.Backend.allCases)
    func theProofMustBeIssuedWithinTheWindow(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "fresh-proof", email: "fresh@example.com"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        world.advanceClock(by: 3000)
        let access = try #require(world.signIn(token: world.googleToken(subject: "fresh-proof", email: "fresh@example.com",
                                                                        changes: ["iat": .number(world.now)]))["tokens"]?["accessToken"])
        world.advanceClock(by: 301)  // the new session is past the window too: a proof is needed
        func proof(_ changes: [String: JSONValue?]) -> JSONValue {
            .string(world.googleToken(subject: "fresh-proof", email: "fresh@example.com", changes: changes))
        }
        func delete(_ idToken: JSONValue) -> String? {
            world.run("delete-account", ["accessToken": access, "provider": "google", "idToken": idToken]).errorCode
        }
        let before = backend == .local ? world.storeSnapshot() : [:]
        #expect(delete(proof([:])) == "REAUTHENTICATION_REQUIRED", "55 minutes old: still valid, not fresh")
        #expect(delete(proof(["iat": .number(world.now - 361)])) == "REAUTHENTICATION_REQUIRED", "a second past window and skew")
        #expect(delete(proof(["iat": .number(world.now), "auth_time": .number(world.now - 3000)])) == "REAUTHENTICATION_REQUIRED",
                "auth_time says when the user last proved who they are")
        #expect(delete(proof(["iat": nil])) == "REAUTHENTICATION_REQUIRED", "no issue time, no proof")
        if backend == .local { #expect(world.storeSnapshot() == before, "refused deletions change nothing") }

        let deleted = world.run("delete-account", ["accessToken": access, "provider": "google", "idToken": proof(["iat": .number(world.now - 360)])])
        #expect(deleted.responseBody == ["deleted": true, "userId": .string(userID)], "at the window's edge: \(deleted.stdoutText)")
    }
}
