import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import LambdaAuthClient

/// The edges an app package built against the library ran into: the shortest access-token
/// lifetime, several observers of `states`, two clients writing one file, an access token the
/// server refuses, a second sign-in.
@Suite(.serialized) struct ClientEdgeTests {
    typealias Clock = ServeLifeCycleTests.Clock

    /// With the shortest lifetime the server allows, a fixed 60 s reserve called every token too
    /// old: each call refreshed, right after sign-in too, and nothing worked offline.
    @Test func aSixtySecondTokenServesWithoutARefresh() async throws {
        let server = try LocalServer(environment: ["AUTH_ACCESS_TOKEN_TTL": "60"])
        let clock = Clock()
        let auth = ServeLifeCycleTests.client(server, clock: clock)
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "short-lived"))
        let signedIn = try #require(await auth.storedSession?.accessToken)
        server.stop()
        #expect(try await auth.validAccessToken() == signedIn, "the sign-in's token, offline")
        try server.start()
        clock.advance(40)
        #expect(try await auth.validAccessToken() == signedIn, "20 s of 60 left: more than a quarter")
        #expect(server.events("refresh") == 0)
        clock.advance(10)
        #expect(try await auth.validAccessToken() != signedIn, "10 s left: within the reserve")
        #expect(server.events("refresh") == 1)
    }
}
