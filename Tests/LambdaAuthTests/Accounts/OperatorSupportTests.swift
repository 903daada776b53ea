import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// What support staff do beyond `users show` (`AccountAdministration+Support`, which the console
/// calls too): finding users, listing them a page at a time, and ending one session as the user's
/// own revocation would. Both backends, through `authctl users`.
@Suite struct OperatorSupportTests {
    static func authctl(_ world: FlowWorld, _ arguments: String...) throws -> ProcessRunner.Output {
        try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: world.environment)
    }

    static func ids(_ output: ProcessRunner.Output) -> [String] {
        (output.json?["users"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func usersAreFoundByIdEmailOrSubjectAndListedInPages(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let first = try #require(world.signIn(token: world.googleToken(subject: "support-a", email: "Support.A@example.com"))["user"]?["id"]?.stringValue)
        let second = try #require(world.signIn(token: world.googleToken(subject: "support-b", email: "b@example.com"))["user"]?["id"]?.stringValue)
        #expect(first != second)
        // The address as typed in any ASCII case, the provider subject, provider:subject, the id.
        for query in ["support.a@example.com", "SUPPORT.A@EXAMPLE.COM", "support-a", "google:support-a", first, " \(first) "] {
            let found = try Self.authctl(world, "users", "find", query)
            #expect(found.exitCode == 0 && Self.ids(found) == [first], "\(query): \(found.stdoutText) \(found.stderrText)")
        }
        #expect(Self.ids(try Self.authctl(world, "users", "find", second)) == [second])
        for query in ["nobody@example.com", "apple:support-a", "", String(repeating: "x", count: 600)] {
            let none = try Self.authctl(world, "users", "find", query)
            #expect(none.exitCode == 0 && Self.ids(none) == [], "\(query.prefix(20)): \(none.stdoutText)")
        }
        let shown = try Self.authctl(world, "users", "find", first).json?["users"]?.arrayValue?.first
        #expect(shown?["email"]?.stringValue == "Support.A@example.com" && shown?["activeSessions"]?.int64Value == 1, "\(String(describing: shown))")

        // One a page: each user once, then an empty last page.
        var seen: [String] = []
        var after: String?
        for _ in 0..<4 {
            let page = try after.map { try Self.authctl(world, "users", "list", "--limit", "1", "--after", $0) }
                ?? Self.authctl(world, "users", "list", "--limit", "1")
            #expect(page.exitCode == 0, "\(page.stderrText)")
            seen += Self.ids(page)
            after = page.json?["next"]?.stringValue
            if after == nil { break }
        }
        #expect(after == nil && seen.sorted() == [first, second].sorted(), "\(seen)")
        #expect(Set(Self.ids(try Self.authctl(world, "users", "list"))) == [first, second])
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func anOperatorsRevocationEndsTheSessionAndARefusalChangesNothing(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "support-revoke"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let sessionID = try #require(signedIn["session"]?["id"]?.stringValue)
        let kept = world.signIn(token: world.googleToken(subject: "support-revoke"))

        let before = try world.storeState()
        let unknownSession = try Self.authctl(world, "users", "revoke-session", userID, "no-such-session")
        #expect(unknownSession.exitCode == 1 && unknownSession.stderrText.contains("not one of the user's active sessions"), "\(unknownSession.stderrText)")
        let unknownUser = try Self.authctl(world, "users", "revoke-session", "no-such-user", sessionID)
        #expect(unknownUser.exitCode == 1 && unknownUser.stderrText.contains("no user"), "\(unknownUser.stderrText)")
        #expect(try world.storeState() == before, "a refused revocation changed the store")

        let revoked = try Self.authctl(world, "users", "revoke-session", userID, sessionID)
        #expect(revoked.exitCode == 0 && revoked.json?["revoked"] == true, "\(revoked.stdoutText) \(revoked.stderrText)")
        let refused = world.run("refresh", ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])])
        #expect(refused.errorCode == "REFRESH_TOKEN_REVOKED", "\(refused.stdoutText)")
        // The user's other session goes on.
        let other = world.run("refresh", ["refreshToken": try #require(kept["tokens"]?["refreshToken"])])
        #expect(other.responseBody?["tokens"] != nil, "\(other.stdoutText)")
        let again = try Self.authctl(world, "users", "revoke-session", userID, sessionID)
        #expect(again.exitCode == 1, "a session already revoked is not active: \(again.stdoutText)")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func anOperatorDeletesOnePasskeyAndARefusalChangesNothing(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(PasskeyFlowTests.passkeysOn, backend: backend)
        let session = try PasskeyFlowTests.googleSession(world, subject: "support-passkey")
        let registered = try PasskeyFlowTests.register(world, session)
        var authenticator = registered.0
        let passkeyID = registered.1

        let before = try world.storeState()
        let unknown = try Self.authctl(world, "users", "delete-passkey", session.userID, "no-such-passkey")
        #expect(unknown.exitCode == 1 && unknown.stderrText.contains("no passkey"), "\(unknown.stderrText)")
        #expect(try world.storeState() == before, "a refused deletion changed the store")

        let deleted = try Self.authctl(world, "users", "delete-passkey", session.userID, passkeyID)
        #expect(deleted.exitCode == 0 && deleted.json?["deleted"] == true, "\(deleted.stdoutText) \(deleted.stderrText)")
        #expect(try Self.authctl(world, "users", "passkeys", session.userID).json?["passkeys"] == [], "the passkey is still listed")
        // The credential no longer signs anyone in; the Google session goes on.
        let refused = PasskeyFlowTests.code {
            try PasskeyFlowTests.signIn(world, authenticator.assertion(challenge: try PasskeyFlowTests.loginChallenge(world)))
        }
        #expect(refused != nil, "a deleted passkey still signed in")
        #expect(try Self.authctl(world, "users", "find", "support-passkey").json?["users"]?.arrayValue?.first?["activeSessions"]?.int64Value == 1)
    }
}
