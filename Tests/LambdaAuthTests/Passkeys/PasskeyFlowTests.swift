import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Contract section 15 in process, on both backends: register, list, sign in, delete, the limit,
/// re-authentication, and every refusal leaving the store as it was.
@Suite(.serialized) struct PasskeyFlowTests {
    static let passkeysOn = ["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "https://example.com"]

    struct Session {
        var userID: String
        var accessToken: String
    }

    static func code(_ body: () throws -> Any) -> String? {
        do { _ = try body(); return nil } catch { return AuthError.from(error).code.rawValue }
    }

    static func googleSession(_ world: FlowWorld, subject: String) throws -> Session {
        let body = try world.inProcess().signIn(idToken: world.googleToken(subject: subject, email: "\(subject)@example.com"))
        return Session(userID: try #require(body["user"]?["id"]?.stringValue), accessToken: try #require(body["tokens"]?["accessToken"]?.stringValue))
    }

    static func passkey(_ world: FlowWorld, _ fields: [String: JSONValue]) throws -> JSONValue {
        let flows = try world.inProcess()
        do {
            return try flows.handler(HandlerCatalogue.passkey).handle(InvocationRequest(kind: .direct, method: "POST", body: fields),
                                                                      context: InvocationContext(requestID: "test", logger: .jsonLines(level: .error))).body
        } catch { throw AuthError.from(error) }
    }

    static func challenge(_ options: JSONValue) throws -> [UInt8] {
        try #require(options["publicKey"]?["challenge"]?.stringValue.flatMap(Base64.urlDecoded))
    }

    /// A new authenticator registered for `session`; its user handle is the one the options gave.
    static func register(_ world: FlowWorld, _ session: Session, algorithm: COSEAlgorithm = .es256) throws -> (SoftPasskeyAuthenticator, String) {
        let options = try passkey(world, ["action": "register-options", "accessToken": .string(session.accessToken)])
        let handle = try #require(options["publicKey"]?["user"]?["id"]?.stringValue.flatMap(Base64.urlDecoded))
        let authenticator = SoftPasskeyAuthenticator(algorithm: algorithm, userHandle: handle)
        let body = try passkey(world, ["action": "register", "accessToken": .string(session.accessToken), "name": "Laptop",
                                       "credential": authenticator.registration(challenge: try challenge(options))])
        return (authenticator, try #require(body["passkey"]?["id"]?.stringValue))
    }

    static func signIn(_ world: FlowWorld, _ credential: JSONValue) throws -> JSONValue {
        let flows = try world.inProcess()
        do {
            return try flows.handler(HandlerCatalogue.signin).handle(InvocationRequest(kind: .direct, method: "POST", body: ["provider": "passkey", "credential": credential]),
                                                                     context: InvocationContext(requestID: "test", logger: .jsonLines(level: .error))).body
        } catch { throw AuthError.from(error) }
    }

    static func loginChallenge(_ world: FlowWorld) throws -> [UInt8] {
        try challenge(try passkey(world, ["action": "login-options"]))
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func registerListSignInAndDelete(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.passkeysOn, backend: backend)
        let session = try Self.googleSession(world, subject: "alice")
        let options = try Self.passkey(world, ["action": "register-options", "accessToken": .string(session.accessToken)])
        let publicKey = try #require(options["publicKey"])
        #expect(publicKey["rp"]?["id"] == "example.com")
        #expect(publicKey["authenticatorSelection"]?["residentKey"] == "required")
        #expect(publicKey["pubKeyCredParams"]?.arrayValue?.compactMap { $0["alg"]?.int64Value } == [-7, -8, -257])
        #expect(try Self.challenge(options).count == 32)
        let handle = try #require(publicKey["user"]?["id"]?.stringValue)
        #expect(handle != session.userID && !handle.contains(session.userID))
        let again = try Self.passkey(world, ["action": "register-options", "accessToken": .string(session.accessToken)])
        #expect(again["publicKey"]?["user"]?["id"]?.stringValue == handle, "one stable handle per user")

        var (authenticator, passkeyID) = try Self.register(world, session, algorithm: .edDSA)
        let listed = try Self.passkey(world, ["action": "list", "accessToken": .string(session.accessToken)])
        #expect(listed["passkeys"]?.arrayValue?.map { $0["id"] } == [.string(passkeyID)])
        #expect(listed["passkeys"]?.arrayValue?.first?["name"] == "Laptop")
        let described = try #require(try world.inProcess().services.administration.describePasskeys(session.userID))
        #expect(described["passkeys"]?.arrayValue?.first?["transports"] == ["internal"])
        #expect(described["passkeys"]?.arrayValue?.first?["id"] == .string(passkeyID))
        #expect(try world.inProcess().services.administration.describePasskeys("nobody") == nil)
        let excluded = try Self.passkey(world, ["action": "register-options", "accessToken": .string(session.accessToken)])
        #expect(excluded["publicKey"]?["excludeCredentials"]?.arrayValue?.first?["id"] == .string(Base64.urlEncoded(authenticator.credentialID)))

        let signedIn = try Self.signIn(world, authenticator.assertion(challenge: try Self.loginChallenge(world)))
        #expect(signedIn["user"]?["id"]?.stringValue == session.userID)
        #expect(signedIn["isNewUser"] == false)
        let providers = signedIn["user"]?["identities"]?.arrayValue?.compactMap { $0["provider"]?.stringValue }.sorted()
        #expect(providers == ["google", "passkey"])
        #expect(signedIn["tokens"]?["accessToken"]?.stringValue != nil)
        let used = try Self.passkey(world, ["action": "list", "accessToken": .string(session.accessToken)])
        #expect(used["passkeys"]?.arrayValue?.first?["lastUsedAt"]?.stringValue != nil)

        #expect(Self.code { try Self.passkey(world, ["action": "delete", "accessToken": .string(session.accessToken), "passkeyId": "nope"]) } == "PASSKEY_NOT_FOUND")
        #expect(try Self.passkey(world, ["action": "delete", "accessToken": .string(session.accessToken), "passkeyId": .string(passkeyID)]) == ["deleted": true])
        #expect(try Self.passkey(world, ["action": "list", "accessToken": .string(session.accessToken)]) == ["passkeys": []])
        #expect(Self.code { try Self.signIn(world, authenticator.assertion(challenge: try Self.loginChallenge(world))) } == "PASSKEY_INVALID")
        // The session the passkey opened lives on: deleting a passkey revokes nothing else.
        let other = try #require(signedIn["tokens"]?["accessToken"]?.stringValue)
        #expect(Self.code { try Self.passkey(world, ["action": "list", "accessToken": .string(other)]) } == nil)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func refusedCeremoniesLeaveTheStoreAsItWas(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.passkeysOn, backend: backend)
        let session = try Self.googleSession(world, subject: "bob")
        var (authenticator, _) = try Self.register(world, session)
        authenticator.signCount = 10
        _ = try Self.signIn(world, authenticator.assertion(challenge: try Self.loginChallenge(world), countIncrement: 0))
        let challenge = try Self.loginChallenge(world)
        let before = try world.allItems(at: 0)
        var replay = authenticator
        let refusals: [(String, JSONValue)] = [
            ("wrong origin", replay.assertion(challenge: challenge, clientDataJSON: authenticator.clientDataJSON(type: "webauthn.get", challenge: challenge, origin: "https://evil.example"))),
            ("wrong rpIdHash", replay.assertion(challenge: challenge, authenticatorData: authenticator.authenticatorData(attested: false, rpID: "evil.example"))),
            ("wrong type", replay.assertion(challenge: challenge, clientDataJSON: authenticator.clientDataJSON(type: "webauthn.create", challenge: challenge))),
            ("UV missing", replay.assertion(challenge: challenge, authenticatorData: authenticator.authenticatorData(attested: false, flags: 0b0001_1001))),
            ("bad signature", replay.assertion(challenge: challenge, corruptSignature: true)),
        ]
        for (name, credential) in refusals {
            #expect(Self.code { try Self.signIn(world, credential) } == "PASSKEY_INVALID", "\(name)")
        }
        var rolledBack = authenticator
        rolledBack.signCount = 3
        #expect(Self.code { try Self.signIn(world, rolledBack.assertion(challenge: challenge)) } == "PASSKEY_INVALID", "counter rollback")
        var malformed = authenticator.assertion(challenge: challenge).objectValue!
        var response = malformed["response"]!.objectValue!
        response["authenticatorData"] = .string(Base64.urlEncoded(authenticator.authenticatorData(attested: false) + [0xA1]))
        malformed["response"] = .object(response)
        #expect(Self.code { try Self.signIn(world, .object(malformed)) } == "PASSKEY_INVALID", "malformed CBOR")
        var stranger = SoftPasskeyAuthenticator(userHandle: authenticator.userHandle)
        #expect(Self.code { try Self.signIn(world, stranger.assertion(challenge: challenge)) } == "PASSKEY_INVALID", "unknown credential")
        #expect(try world.allItems(at: 0) == before, "no refusal wrote anything")

        // The challenge survived every refusal; it serves one ceremony, then never again.
        authenticator.signCount = 11
        #expect(Self.code { try Self.signIn(world, authenticator.assertion(challenge: challenge)) } == nil)
        #expect(Self.code { try Self.signIn(world, authenticator.assertion(challenge: challenge)) } == "CHALLENGE_EXPIRED")
        let late = try Self.loginChallenge(world)
        world.advanceClock(by: 301)
        #expect(Self.code { try Self.signIn(world, authenticator.assertion(challenge: late)) } == "CHALLENGE_EXPIRED")
        #expect(Self.code { try Self.signIn(world, authenticator.assertion(challenge: Array(repeating: 1, count: 32))) } == "CHALLENGE_EXPIRED")
    }

    /// docs/aws-backends.md, "Requests per flow": the credential's link, the user, one transaction; GSI1 never.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aPasskeySignInTakesThreeRequests(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.passkeysOn, backend: backend)
        let session = try Self.googleSession(world, subject: "counted")
        var (authenticator, _) = try Self.register(world, session)
        let credential = authenticator.assertion(challenge: try Self.loginChallenge(world))
        let flows = try InProcessFlows(world, refusingQueriesOn: "GSI1")
        let signin = try flows.handler(HandlerCatalogue.signin)
        // A warm process: the local store's development keys are read once per process.
        _ = try flows.signIn(idToken: world.googleToken(subject: "counted", email: "counted@example.com"))
        _ = flows.table.takeOperations()
        let answer = try signin.handle(InvocationRequest(kind: .direct, method: "POST", body: ["provider": "passkey", "credential": credential]),
                                       context: InvocationContext(requestID: "test", logger: .jsonLines(level: .error))).body
        #expect(answer["user"]?["id"]?.stringValue == session.userID)
        #expect(flows.table.takeOperations() == ["GetItem", "Query", "TransactWriteItems"])
    }

    /// The whole HTTP response to a passkey sign-in, as API Gateway would pass it on: status,
    /// headers and body.
    static func signInResponseBytes(_ world: FlowWorld, _ credential: JSONValue) throws -> [UInt8] {
        let flows = try world.inProcess()
        let request = InvocationRequest(kind: .direct, method: "POST", body: ["provider": "passkey", "credential": credential])
        let response = try HandlerMain.respond(to: request, context: InvocationContext(requestID: "test", logger: .jsonLines(level: .error)),
                                               testMode: false) { try flows.handler(HandlerCatalogue.signin) }
        return EventCodec.encode(response, kind: .httpAPIv2).serializedBytes()
    }

    /// Contract section 15: whoever presents a credential id without its key must not learn
    /// whether it is registered. A prober holds an authenticator of its own and sets any id,
    /// user handle and flags it likes; each answer must be the unknown credential's, byte for byte.
    @Test func aCredentialIDWithoutItsKeyLearnsNothing() throws {
        let world = FlowWorld(Self.passkeysOn)
        let session = try Self.googleSession(world, subject: "dana")
        var (registered, _) = try Self.register(world, session)
        let challenge = try Self.loginChallenge(world)
        let before = try world.allItems(at: 0)

        var unknown = SoftPasskeyAuthenticator(userHandle: registered.userHandle)
        let expected = try Self.signInResponseBytes(world, unknown.assertion(challenge: challenge))
        let answer = try JSONValue.parse(expected)
        #expect(answer["statusCode"] == 401)
        #expect(try JSONValue.parse(Array((answer["body"]?.stringValue ?? "").utf8))
                == ["error": ["code": "PASSKEY_INVALID", "message": "the credential is unknown or its signature does not verify",
                              "status": 401, "retryable": false]])

        func impostor(userHandle: [UInt8]) -> SoftPasskeyAuthenticator {
            SoftPasskeyAuthenticator(userHandle: userHandle, credentialID: registered.credentialID)
        }
        var wrongHandle = impostor(userHandle: [9, 9, 9])
        var rightHandle = impostor(userHandle: registered.userHandle)
        var noHandle = rightHandle.assertion(challenge: challenge).objectValue!
        var response = noHandle["response"]!.objectValue!
        response["userHandle"] = nil
        noHandle["response"] = .object(response)
        var strangerHandle = registered
        strangerHandle.userHandle = [7]
        let probes: [(String, JSONValue)] = [
            ("a registered id, another user's handle", wrongHandle.assertion(challenge: challenge)),
            ("a registered id, no user handle", .object(noHandle)),
            ("a registered id, BE cleared", rightHandle.assertion(challenge: challenge,
                                                                  authenticatorData: rightHandle.authenticatorData(attested: false, flags: 0b0000_0101))),
            ("a registered id, its own handle", rightHandle.assertion(challenge: challenge)),
            ("the registered key's signature flipped, wrong handle", strangerHandle.assertion(challenge: challenge, corruptSignature: true)),
            ("the registered key's signature flipped", registered.assertion(challenge: challenge, corruptSignature: true)),
        ]
        for (name, credential) in probes {
            let bytes = try Self.signInResponseBytes(world, credential)
            #expect(bytes == expected, "\(name): \(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(try world.allItems(at: 0) == before, "no probe wrote anything")
    }

    @Test func racingUsesOfOneChallengeGiveOneSession() throws {
        let world = FlowWorld(Self.passkeysOn)
        let session = try Self.googleSession(world, subject: "racer")
        let (authenticator, _) = try Self.register(world, session)
        let challenge = try Self.loginChallenge(world)
        let credentials: [JSONValue] = (1...4).map { index in
            var copy = authenticator
            copy.signCount = UInt32(index * 10)
            return copy.assertion(challenge: challenge)
        }
        let outcomes = runSimultaneously(4) { index in Self.code { try Self.signIn(world, credentials[index]) } ?? "OK" }
        #expect(outcomes.filter { $0 == "OK" }.count == 1, "\(outcomes)")
        #expect(outcomes.allSatisfy { $0 == "OK" || $0 == "CHALLENGE_EXPIRED" || $0 == "PASSKEY_INVALID" }, "\(outcomes)")
    }

    @Test func registrationRulesAndTheLimitOfTen() throws {
        let world = FlowWorld(Self.passkeysOn)
        let session = try Self.googleSession(world, subject: "collector")
        for _ in 1...10 { _ = try Self.register(world, session) }
        #expect(Self.code { try Self.register(world, session) } == "PASSKEY_LIMIT_REACHED")

        let other = try Self.googleSession(world, subject: "second")
        let options = try Self.passkey(world, ["action": "register-options", "accessToken": .string(other.accessToken)])
        let handle = try #require(options["publicKey"]?["user"]?["id"]?.stringValue.flatMap(Base64.urlDecoded))
        let authenticator = SoftPasskeyAuthenticator(userHandle: handle)
        let registration = authenticator.registration(challenge: try Self.challenge(options))
        // Another user's registration challenge is not this caller's.
        let third = try Self.googleSession(world, subject: "third")
        #expect(Self.code { try Self.passkey(world, ["action": "register", "accessToken": .string(third.accessToken), "credential": registration]) } == "CHALLENGE_EXPIRED")
        _ = try Self.passkey(world, ["action": "register", "accessToken": .string(other.accessToken), "credential": registration])
        let next = try Self.passkey(world, ["action": "register-options", "accessToken": .string(other.accessToken)])
        #expect(Self.code { try Self.passkey(world, ["action": "register", "accessToken": .string(other.accessToken),
                                                     "credential": authenticator.registration(challenge: try Self.challenge(next))]) } == "PASSKEY_ALREADY_REGISTERED")
    }

    @Test func aPasskeyReauthenticatesADeletionAndIsTheLastIdentity() throws {
        let world = FlowWorld(Self.passkeysOn)
        let owner = try Self.googleSession(world, subject: "leaver")
        var (authenticator, passkeyID) = try Self.register(world, owner)
        let stranger = try Self.googleSession(world, subject: "stranger")
        var (strangerKey, _) = try Self.register(world, stranger)
        // Unlinking google leaves the passkey as the last identity.
        _ = try world.inProcess().linkProvider(["accessToken": .string(owner.accessToken), "provider": "google", "action": "unlink"])
        #expect(Self.code { try Self.passkey(world, ["action": "delete", "accessToken": .string(owner.accessToken), "passkeyId": .string(passkeyID)]) } == "LAST_IDENTITY")
        world.advanceClock(by: 600)
        let refreshed = try Self.signIn(world, authenticator.assertion(challenge: try Self.loginChallenge(world)))
        let accessToken = try #require(refreshed["tokens"]?["accessToken"]?.stringValue)
        world.advanceClock(by: 600)
        #expect(Self.code { try world.inProcess().deleteAccount(["accessToken": .string(accessToken), "provider": "passkey",
                                                                 "credential": strangerKey.assertion(challenge: try Self.loginChallenge(world))]) } == "REAUTHENTICATION_REQUIRED")
        let deleted = try world.inProcess().deleteAccount(["accessToken": .string(accessToken), "provider": "passkey",
                                                           "credential": authenticator.assertion(challenge: try Self.loginChallenge(world))])
        #expect(deleted["deleted"] == true)
        // The revocation list's entry (contract section 20) names the user until its tokens expire.
        let left = try world.allItems(at: 0).filter { item in
            let text = "\(item)"
            return (text.contains(owner.userID) || text.contains(passkeyID)) && !(item["PK"]?.stringValue ?? "").hasPrefix("REVOKED#")
        }
        #expect(left.isEmpty, "\(left)")
    }

    /// The hostile registrations: each refused with its code, every item as it was, and the
    /// challenge still good for the honest registration that follows.
    @Test(arguments: FlowWorld.Backend.allCases)
    func refusedRegistrationsLeaveTheStoreAsItWas(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.passkeysOn, backend: backend)
        let session = try Self.googleSession(world, subject: "carol")
        let options = try Self.passkey(world, ["action": "register-options", "accessToken": .string(session.accessToken)])
        let challenge = try Self.challenge(options)
        let handle = try #require(options["publicKey"]?["user"]?["id"]?.stringValue.flatMap(Base64.urlDecoded))
        let authenticator = SoftPasskeyAuthenticator(userHandle: handle)
        let authData = authenticator.authenticatorData(attested: true)
        let object = TestCBOR.map([(.text("fmt"), .text("none")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(authData))]).encoded
        var es384 = authenticator.authenticatorData(attested: false)
        es384[32] |= 0x40
        es384 += [UInt8](repeating: 0, count: 16) + [0, UInt8(authenticator.credentialID.count)] + authenticator.credentialID
        es384 += TestCBOR.map([(.int(1), .int(2)), (.int(3), .int(-35)), (.int(-1), .int(2)), (.int(-2), .bytes(Array(repeating: 1, count: 48))),
                               (.int(-3), .bytes(Array(repeating: 1, count: 48)))]).encoded
        let hostile: [(String, JSONValue)] = [
            ("truncated CBOR", authenticator.registration(challenge: challenge, attestationObject: Array(object.dropLast(3)))),
            ("over-long CBOR", authenticator.registration(challenge: challenge, attestationObject: object + [0x00])),
            ("duplicate map keys", authenticator.registration(challenge: challenge, attestationObject: TestCBOR.map([
                (.text("fmt"), .text("none")), (.text("fmt"), .text("none")), (.text("authData"), .bytes(authData))]).encoded)),
            ("unsupported algorithm", authenticator.registration(challenge: challenge, authenticatorData: es384)),
            ("credential id of 1,100 bytes", SoftPasskeyAuthenticator(userHandle: handle, credentialID: Array(repeating: 9, count: 1100))
                .registration(challenge: challenge)),
            ("wrong origin", authenticator.registration(challenge: challenge, clientDataJSON: authenticator.clientDataJSON(
                type: "webauthn.create", challenge: challenge, origin: "https://evil.example"))),
        ]
        let before = try world.allItems(at: 0)
        for (name, credential) in hostile {
            #expect(Self.code { try Self.passkey(world, ["action": "register", "accessToken": .string(session.accessToken), "credential": credential]) }
                    == "PASSKEY_INVALID", "\(name)")
        }
        #expect(try world.allItems(at: 0) == before, "no refusal wrote anything")
        #expect(Self.code { try Self.passkey(world, ["action": "register", "accessToken": .string(session.accessToken),
                                                     "credential": authenticator.registration(challenge: challenge)]) } == nil)
    }

    /// Registering is the link: an assertion presented to link-provider proves a passkey that is
    /// linked already, to the caller (an idempotent 200) or to someone else; unlinking goes by id.
    @Test func linkProviderWithAPasskey() throws {
        let world = FlowWorld(Self.passkeysOn)
        let owner = try Self.googleSession(world, subject: "linker")
        var (authenticator, _) = try Self.register(world, owner)
        let other = try Self.googleSession(world, subject: "other-linker")
        let flows = try world.inProcess()
        let linked = try flows.linkProvider(["accessToken": .string(owner.accessToken), "provider": "passkey",
                                             "credential": authenticator.assertion(challenge: try Self.loginChallenge(world))])
        #expect(linked["user"]?["identities"]?.arrayValue?.count == 2)
        #expect(Self.code { try flows.linkProvider(["accessToken": .string(other.accessToken), "provider": "passkey",
                                                    "credential": authenticator.assertion(challenge: try Self.loginChallenge(world))]) }
                == "IDENTITY_LINKED_TO_OTHER_USER")
        #expect(Self.code { try flows.linkProvider(["accessToken": .string(owner.accessToken), "provider": "passkey", "action": "unlink"]) }
                == "INVALID_REQUEST")
    }

    /// A guest's first passkey makes it a full user (same id, no `ttl` left on its profile or
    /// handle), as a first link does; then the passkey signs that user in.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aGuestsFirstPasskeyUpgradesIt(backend: FlowWorld.Backend) throws {
        var environment = Self.passkeysOn
        environment["AUTH_GUEST"] = "on"
        let world = try FlowWorld(environment, backend: backend)
        let guest = try world.inProcess().handler(HandlerCatalogue.signin).handle(InvocationRequest(kind: .direct, method: "POST", body: ["provider": "guest"]),
                                                                                 context: InvocationContext(requestID: "test", logger: .jsonLines(level: .error))).body
        let session = Session(userID: try #require(guest["user"]?["id"]?.stringValue), accessToken: try #require(guest["tokens"]?["accessToken"]?.stringValue))
        #expect(guest["user"]?["isGuest"] == true)
        var (authenticator, passkeyID) = try Self.register(world, session)
        let signedIn = try Self.signIn(world, authenticator.assertion(challenge: try Self.loginChallenge(world)))
        #expect(signedIn["user"]?["id"]?.stringValue == session.userID)
        #expect(signedIn["user"]?["isGuest"] != true)
        #expect(signedIn["user"]?["identities"]?.arrayValue?.map { $0["subject"] } == [.string(passkeyID)])
        let kept = try world.allItems(at: 0).filter {
            $0["PK"]?.stringValue == "USER#\(session.userID)" && ["PROFILE", "WEBAUTHN#HANDLE"].contains($0["SK"]?.stringValue ?? "")
        }
        #expect(kept.count == 2 && kept.allSatisfy { $0["ttl"] == nil }, "\(kept)")
    }

    /// A registration without options ever asked for writes nothing, not even the user's handle.
    @Test func aRegistrationWithoutOptionsWritesNothing() throws {
        let world = FlowWorld(Self.passkeysOn)
        let session = try Self.googleSession(world, subject: "eager")
        let before = try world.allItems(at: 0)
        let credential = SoftPasskeyAuthenticator().registration(challenge: Array(repeating: 3, count: 32))
        #expect(Self.code { try Self.passkey(world, ["action": "register", "accessToken": .string(session.accessToken), "credential": credential]) }
                == "CHALLENGE_EXPIRED")
        #expect(try world.allItems(at: 0) == before)
    }

    /// login-options writes a challenge for anyone: over HTTP, AUTH_PASSKEY_OPTIONS_RATE per source IP.
    @Test func loginOptionsAreLimitedPerSourceIP() throws {
        var environment = Self.passkeysOn
        environment["AUTH_PASSKEY_OPTIONS_RATE"] = "3"
        let world = FlowWorld(environment)
        let handler = try world.inProcess().handler(HandlerCatalogue.passkey)
        func options(from sourceIP: String?) -> String? {
            let request = InvocationRequest(kind: sourceIP == nil ? .direct : .httpAPIv2, method: "POST", body: ["action": "login-options"], sourceIP: sourceIP)
            return Self.code { try handler.handle(request, context: InvocationContext(requestID: "test", logger: .jsonLines(level: .error))) }
        }
        #expect((1...3).map { _ in options(from: "203.0.113.7") } == [nil, nil, nil])
        #expect(options(from: "203.0.113.7") == "RATE_LIMITED")
        #expect(options(from: "203.0.113.8") == nil)
        #expect((1...5).map { _ in options(from: nil) } == [nil, nil, nil, nil, nil], "direct invocations are not limited")
        #expect(options(from: "not an address") == "INVALID_REQUEST")
    }

    @Test func passkeysAreOffWithoutAnRPID() throws {
        let world = FlowWorld()
        #expect(Self.code { try Self.passkey(world, ["action": "login-options"]) } == "PROVIDER_NOT_CONFIGURED")
        var authenticator = SoftPasskeyAuthenticator()
        #expect(Self.code { try Self.signIn(world, authenticator.assertion(challenge: [1])) } == "PROVIDER_NOT_CONFIGURED")
    }
}
