import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// `signout` and `sessions` (contract section 7) on both backends.
@Suite(.serialized) struct SessionLifecycleTests {
    struct Device {
        var accessToken: String
        var refreshToken: String
        var sessionID: String
    }

    static func signIn(_ world: FlowWorld, subject: String = "lifecycle-user", device: String) throws -> Device {
        let body = world.signIn(token: world.googleToken(subject: subject), extra: ["device": ["name": .string(device)]])
        return Device(accessToken: try #require(body["tokens"]?["accessToken"]?.stringValue),
                      refreshToken: try #require(body["tokens"]?["refreshToken"]?.stringValue),
                      sessionID: try #require(body["session"]?["id"]?.stringValue))
    }

    /// The refresh token's next token, or the error code.
    static func refresh(_ world: FlowWorld, _ device: inout Device) -> String? {
        let output = world.run("refresh", ["refreshToken": .string(device.refreshToken)])
        if let next = output.responseBody?["tokens"]?["refreshToken"]?.stringValue {
            device.refreshToken = next
            device.accessToken = output.responseBody?["tokens"]?["accessToken"]?.stringValue ?? device.accessToken
            return nil
        }
        return output.errorCode ?? "no answer: \(output.stdoutText)"
    }

    static func revokedCount(_ output: ProcessRunner.Output) -> Int64? { output.responseBody?["revokedSessions"]?.int64Value }

    @Test(arguments: FlowWorld.Backend.allCases)
    func eachScopeRevokesExactlyTheSessionsItNames(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        var phone = try Self.signIn(world, device: "phone")
        var tablet = try Self.signIn(world, device: "tablet")
        var laptop = try Self.signIn(world, device: "laptop")

        let one = world.run("signout", ["accessToken": .string(phone.accessToken)])
        #expect(Self.revokedCount(one) == 1, "\(one.stdoutText)")
        #expect(Self.refresh(world, &phone) == "REFRESH_TOKEN_REVOKED")
        #expect(Self.refresh(world, &tablet) == nil)
        #expect(Self.refresh(world, &laptop) == nil)
        let again = world.run("signout", ["refreshToken": .string(phone.refreshToken)])
        #expect(Self.revokedCount(again) == 0, "signing out a revoked session is a 200 with 0: \(again.stdoutText)")
        #expect(world.run("link-provider", ["provider": "apple", "idToken": .string(world.appleToken(subject: "000123.x.1")),
                                            "accessToken": .string(phone.accessToken)]).errorCode == "ACCESS_TOKEN_REVOKED")

        let others = world.run("signout", ["refreshToken": .string(tablet.refreshToken), "scope": "others"])
        #expect(Self.revokedCount(others) == 1, "\(others.stdoutText)")
        #expect(Self.refresh(world, &laptop) == "REFRESH_TOKEN_REVOKED")
        #expect(Self.refresh(world, &tablet) == nil, "the caller's own session stays")

        var watch = try Self.signIn(world, device: "watch")
        let global = world.run("signout", ["accessToken": .string(watch.accessToken), "scope": "global"])
        #expect(Self.revokedCount(global) == 2, "\(global.stdoutText)")
        #expect(Self.refresh(world, &tablet) == "REFRESH_TOKEN_REVOKED")
        #expect(Self.refresh(world, &watch) == "REFRESH_TOKEN_REVOKED")
        #expect(world.run("sessions", ["accessToken": .string(watch.accessToken)]).errorCode == "ACCESS_TOKEN_REVOKED")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func sessionsListsMostRecentFirstAndRevokesOnlyTheCallersOwn(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        var phone = try Self.signIn(world, device: "phone")
        world.advanceClock(by: 60)
        let laptop = try Self.signIn(world, device: "laptop")
        world.advanceClock(by: 60)
        #expect(Self.refresh(world, &phone) == nil, "the phone is now the most recently active")
        let stranger = try Self.signIn(world, subject: "someone-else", device: "theirs")

        let listed = world.run("sessions", ["accessToken": .string(laptop.accessToken)])
        let sessions = try #require(listed.responseBody?["sessions"]?.arrayValue, "\(listed.stdoutText)")
        #expect(sessions.map { $0["id"]?.stringValue } == [phone.sessionID, laptop.sessionID])
        #expect(sessions.map { $0["current"] } == [false, true])
        #expect(sessions.first?["device"]?["name"]?.stringValue == "phone")
        #expect(sessions.first?["lastActiveAt"]?.stringValue == ISO8601.format(epochSeconds: world.now))

        let before = backend == .local ? world.storeSnapshot() : [:]
        let theirs = world.run("sessions", ["accessToken": .string(laptop.accessToken), "action": "revoke", "sessionId": .string(stranger.sessionID)])
        #expect(theirs.errorCode == "SESSION_NOT_FOUND", "\(theirs.stdoutText)")
        #expect(theirs.responseBody?["error"]?["status"]?.int64Value == 404)
        #expect(!theirs.stdoutText.contains(stranger.sessionID), "the answer never says whose session it is")
        if backend == .local { #expect(world.storeSnapshot() == before, "a refused request changes nothing") }

        let revoked = world.run("sessions", ["accessToken": .string(laptop.accessToken), "action": "revoke", "sessionId": .string(phone.sessionID)])
        #expect(Self.revokedCount(revoked) == 1, "\(revoked.stdoutText)")
        #expect(Self.refresh(world, &phone) == "REFRESH_TOKEN_REVOKED")
        let twice = world.run("sessions", ["accessToken": .string(laptop.accessToken), "action": "revoke", "sessionId": .string(phone.sessionID)])
        #expect(twice.errorCode == "SESSION_NOT_FOUND")
        let remaining = world.run("sessions", ["accessToken": .string(laptop.accessToken)]).responseBody?["sessions"]?.arrayValue
        #expect(remaining?.map { $0["id"]?.stringValue } == [laptop.sessionID])
        var strangerDevice = stranger
        #expect(Self.refresh(world, &strangerDevice) == nil, "nobody else's session was touched")
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func sixteenRefreshesRacingAGlobalSignOutLeaveNoUsableToken(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let device = try Self.signIn(world, device: "phone")
        let refreshes = try (0..<16).map { _ in try world.start("refresh") }
        let signOut = try world.start("signout")
        let refreshEvent = JSONValue.object(["refreshToken": .string(device.refreshToken)]).serializedBytes()
        let signOutEvent = JSONValue.object(["accessToken": .string(device.accessToken), "scope": "global"]).serializedBytes()
        let outputs = runSimultaneously(17) { index in
            index == 16 ? signOut.finish(stdin: signOutEvent) : refreshes[index].finish(stdin: refreshEvent)
        }
        outputs.forEach(world.record)
        #expect(Self.revokedCount(outputs[16]) == 1, "\(outputs[16].stdoutText)")
        var tokens = outputs.prefix(16).compactMap { $0.responseBody?["tokens"]?["refreshToken"]?.stringValue }
        tokens.append(device.refreshToken)
        for token in tokens {
            let output = world.run("refresh", ["refreshToken": .string(token)])
            #expect(output.errorCode == "REFRESH_TOKEN_REVOKED", "a token outlived the sign-out: \(output.stdoutText)")
        }
    }

    @Test func badRequestsGetTheContractsErrorAndChangeNothing() throws {
        let world = FlowWorld()
        let device = try Self.signIn(world, device: "phone")
        let before = world.storeSnapshot()
        let cases: [(String, JSONValue, String)] = [
            ("signout", ["accessToken": .string(device.accessToken), "scope": "everything"], "INVALID_REQUEST"),
            ("signout", [:], "ACCESS_TOKEN_INVALID"),
            ("signout", ["refreshToken": "not-a-token"], "REFRESH_TOKEN_NOT_FOUND"),
            ("signout", ["refreshToken": 42], "INVALID_REQUEST"),
            ("signout", ["accessToken": "eyJhbGciOiJub25lIn0.e30."], "ACCESS_TOKEN_INVALID"),
            ("sessions", [:], "ACCESS_TOKEN_INVALID"),
            ("sessions", ["accessToken": .string(device.accessToken), "action": "explode"], "INVALID_REQUEST"),
            ("sessions", ["accessToken": .string(device.accessToken), "action": "revoke"], "INVALID_REQUEST"),
            ("sessions", ["accessToken": .string(device.accessToken), "action": "revoke", "sessionId": "no-such-session"], "SESSION_NOT_FOUND"),
            ("delete-account", [:], "ACCESS_TOKEN_INVALID"),
            ("delete-account", ["accessToken": .string(device.accessToken), "idToken": "x"], "INVALID_REQUEST"),
        ]
        for (handler, event, code) in cases {
            let output = world.run(handler, event)
            #expect(output.exitCode == 0)
            #expect(output.errorCode == code, "\(handler) \(event.serialized()): \(output.stdoutText)")
            #expect(output.responseBody?["error"]?["message"]?.stringValue?.isEmpty == false)
        }
        #expect(world.storeSnapshot() == before)
        for line in world.logs.joined(separator: "\n").split(separator: "\n") {
            #expect(!line.contains(device.accessToken) && !line.contains(device.refreshToken), "a token in a log line: \(line)")
        }
    }
}
