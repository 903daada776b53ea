import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Contract section 13: `signout` counts only sessions that were still live. A session whose last
/// refresh token expired (or that reached AUTH_SESSION_MAX_AGE) ended on its own: signing out
/// takes it off the profile but does not count it.
@Suite(.serialized) struct SignOutLiveSessionsTests {
    static let day: Int64 = 86_400

    @Test(arguments: FlowWorld.Backend.allCases, ["global", "others"])
    func sessionsThatEndedOnTheirOwnAreNotCounted(backend: FlowWorld.Backend, scope: String) throws {
        let world = try FlowWorld(backend: backend)
        let idToken = world.googleToken(subject: "many-devices")
        let first = try world.inProcess()
        let phone = try #require(try first.signIn(idToken: idToken)["tokens"]?["refreshToken"]?.stringValue)
        _ = try first.signIn(idToken: idToken)  // a laptop, never refreshed again
        let tablet = try #require(try first.signIn(idToken: idToken)["tokens"]?["refreshToken"]?.stringValue)
        world.advanceClock(by: 20 * Self.day)
        let later = try world.inProcess()
        let phoneNext = try #require(later.refreshAnswer(phone).token)
        #expect(later.refreshAnswer(tablet).token != nil)
        world.advanceClock(by: 11 * Self.day)  // the laptop's token expired a day ago
        let now = try world.inProcess()
        let phoneBody = try now.refresh(phoneNext)
        let accessToken = try #require(phoneBody["tokens"]?["accessToken"])
        let answer = try now.signOut(["accessToken": accessToken, "scope": .string(scope)])
        #expect(answer == ["revokedSessions": scope == "global" ? 2 : 1], "the laptop's session had ended: \(answer)")
        #expect(try now.signOut(["accessToken": accessToken, "scope": "session"]) == ["revokedSessions": scope == "global" ? 0 : 1])
    }
}
