import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// A passkey and a second factor (contract section 21): registering one needs aal2 once the user
/// has a factor; a passkey verified with UV is two factors already and signs in directly at aal2
/// (`amr` `hwk`, `user`); one without UV asks for the factor like any other provider.
@Suite(.serialized) struct MFAPasskeyTests {
    @Test(arguments: FlowWorld.Backend.allCases)
    func aPasskeyWithUserVerificationIsTwoFactorsAlready(backend: FlowWorld.Backend) throws {
        var environment = MFAFlowTests.mfaOn
        environment.merge(PasskeyFlowTests.passkeysOn) { $1 }
        environment["AUTH_PASSKEY_USER_VERIFICATION"] = "preferred"
        let world = try FlowWorld(environment, backend: backend)
        let (first, peer, _) = try MFAFlowTests.enrolled(world, "ada")
        #expect(MFAFlowTests.refusal {
            try PasskeyFlowTests.register(world, PasskeyFlowTests.Session(userID: first.userID, accessToken: first.accessToken))
        } == "AAL2_REQUIRED", "an aal1 session of a user with a factor registers no passkey")

        world.advanceClock(by: 60)
        let token = try MFAFlowTests.mfaToken(world, "ada")
        let session = try MFAFlowTests.Session(try MFAFlowTests.challenge(world, token, code: try peer.code(at: world.now)))
        var (authenticator, _) = try PasskeyFlowTests.register(world, PasskeyFlowTests.Session(userID: session.userID, accessToken: session.accessToken))

        let verified = try PasskeyFlowTests.signIn(world, authenticator.assertion(challenge: try PasskeyFlowTests.loginChallenge(world)))
        let claims = try MFAFlowTests.claims(try #require(verified["tokens"]?["accessToken"]?.stringValue))
        #expect(claims["aal"] == "aal2" && claims["amr"] == ["hwk", "user"])

        authenticator.flags &= ~0b0000_0100  // UV off: one factor, the key alone
        do {
            _ = try PasskeyFlowTests.signIn(world, authenticator.assertion(challenge: try PasskeyFlowTests.loginChallenge(world)))
            Issue.record("a passkey without UV signed a user with a factor in")
        } catch {
            #expect(AuthError.from(error).code == .mfaRequired)
        }
    }
}
