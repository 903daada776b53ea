import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// The handlers on services built once (`InProcessFlows`) on the local store, a fixed clock
/// (AUTH_NOW) and seeded randomness: reproducible identifiers and tokens.
@Suite struct InProcessFlowTests {
    static func code(_ body: () throws(AuthError) -> JSONValue) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return error.code.rawValue
        }
    }

    @Test func theSameSeedGivesTheSameIdentifiersAndRefreshTokens() throws {
        func signIn(seed: UInt64) throws -> [String?] {
            let world = FlowWorld()
            let flows = try InProcessFlows(world, random: SeededRandomSource(seed: seed))
            let body = try flows.signIn(idToken: world.googleToken(subject: "seeded"))
            return [body["user"]?["id"]?.stringValue, body["session"]?["id"]?.stringValue, body["tokens"]?["refreshToken"]?.stringValue]
        }
        let first = try signIn(seed: 42)
        #expect(!first.contains(nil))
        #expect(try signIn(seed: 42) == first)
        #expect(try signIn(seed: 43) != first)
    }

    @Test func aReuseAfterTheGracePeriodRevokesTheWholeFamily() throws {
        let world = FlowWorld()
        var flows = try InProcessFlows(world, random: SeededRandomSource(seed: 7))
        let first = try #require(try flows.signIn(idToken: world.googleToken(subject: "grace"))["tokens"]?["refreshToken"]?.stringValue)
        let second = try #require(try flows.refresh(first)["tokens"]?["refreshToken"]?.stringValue)
        let again = try #require(try flows.refresh(first)["tokens"]?["refreshToken"]?.stringValue, "within the grace period")
        #expect(again == second, "a grace retry answers the live token again, forking nothing")
        world.advanceClock(by: 120)
        flows = try InProcessFlows(world, random: SeededRandomSource(seed: 8))
        #expect(Self.code { () throws(AuthError) in try flows.refresh(first) } == "REFRESH_TOKEN_REUSED")
        #expect(Self.code { () throws(AuthError) in try flows.refresh(second) } == "REFRESH_TOKEN_REVOKED")
    }

    @Test func sessionsSignOutAndDeletionInProcess() throws {
        let world = FlowWorld()
        let flows = try InProcessFlows(world, random: SeededRandomSource(seed: 9))
        let token = world.googleToken(subject: "in-process", email: "in-process@example.com")
        let phone = try flows.signIn(idToken: token)
        let laptop = try flows.signIn(idToken: token)
        let laptopAccess = try #require(laptop["tokens"]?["accessToken"])
        let listed = try flows.sessions(["accessToken": laptopAccess])["sessions"]?.arrayValue ?? []
        #expect(listed.count == 2)
        #expect(listed.filter { $0["current"] == true }.map { $0["id"] } == [laptop["session"]?["id"]])

        #expect(try flows.signOut(["accessToken": laptopAccess, "scope": "others"]) == ["revokedSessions": 1])
        let phoneRefresh = try #require(phone["tokens"]?["refreshToken"]?.stringValue)
        #expect(Self.code { () throws(AuthError) in try flows.refresh(phoneRefresh) } == "REFRESH_TOKEN_REVOKED")

        let userID = try #require(laptop["user"]?["id"])
        #expect(try flows.deleteAccount(["accessToken": laptopAccess]) == ["deleted": true, "userId": userID])
        let left = try world.table().query(QueryRequest(keyCondition: "PK = :pk",
                                                        attributes: ExpressionAttributes(values: [":pk": .s("USER#" + (userID.stringValue ?? ""))])))
        #expect(left.items.isEmpty)
        #expect(try flows.signIn(idToken: token)["isNewUser"] == true)
    }
}
