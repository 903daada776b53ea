import Crypto
@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// `signin` with an Apple `authorizationCode`, Apple's refresh token kept sealed, and its
/// revocation before delete-account and before an Apple unlink (contract section 8), as the
/// handlers do it against the dev Apple server, on both backends.
@Suite(.serialized) struct AppleCodeExchangeTests {
    static let subject = "000777.apple.1"

    struct Setup {
        let apple: AppleServerFixture
        let world: FlowWorld

        init(_ backend: FlowWorld.Backend, extra: [String: String] = [:]) throws {
            apple = try AppleServerFixture()
            world = try FlowWorld(apple.environment.merging(extra) { $1 }, backend: backend)
        }

        func signIn(subject: String = AppleCodeExchangeTests.subject, codeFor codeSubject: String? = nil) -> ProcessRunner.Output {
            let code = apple.server.mintCode(subject: codeSubject ?? subject, clientID: TestIssuer.appleAudience)
            return world.run("signin", ["provider": "apple", "idToken": .string(world.appleToken(subject: subject)),
                                        "authorizationCode": .string(code)])
        }

        func storedToken(of userID: String) throws -> Item? {
            try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "TOKEN#apple"))
        }

        /// No Apple token, client secret or private key in any handler's log or in `outputs`.
        func expectNoSecretLeaked(_ outputs: [ProcessRunner.Output] = [], sourceLocation: SourceLocation = #_sourceLocation) {
            let logs = world.logs.joined(separator: "\n") + outputs.map(\.stdoutText).joined(separator: "\n")
            var secrets = apple.server.issuedRefreshTokens + apple.server.receivedClientSecrets
            secrets += apple.pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
            secrets.append(Base64.encoded(apple.dataKey))
            #expect(!secrets.isEmpty, sourceLocation: sourceLocation)
            for secret in secrets where secret.count >= 16 {
                #expect(!logs.contains(secret), "a secret reached a log or response: \(secret.prefix(10))…", sourceLocation: sourceLocation)
                for part in secret.split(separator: ".") where part.count >= 24 {
                    #expect(!logs.contains(part), "part of a secret reached a log: \(part.prefix(10))…", sourceLocation: sourceLocation)
                }
            }
        }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func theCodeIsExchangedAndApplesTokenKeptSealed(backend: FlowWorld.Backend) throws {
        let setup = try Setup(backend)
        let signedIn = setup.signIn()
        let body = try #require(signedIn.responseBody)
        #expect(body["error"] == nil, "\(signedIn.stdoutText)")
        let userID = try #require(body["user"]?["id"]?.stringValue)
        let issued = try #require(setup.apple.server.issuedRefreshTokens.first)
        let item = try #require(try setup.storedToken(of: userID))
        let sealed = try #require(item["sealedToken"]?.stringValue)
        #expect(!DynamoJSON.encode(item).serialized().contains(issued), "the stored token is not the plaintext")
        #expect(item["clientId"] == .s(TestIssuer.appleAudience) && item["subject"] == .s(Self.subject))
        let sealing = ProviderTokenSealing(keys: DataKeys([setup.apple.dataKey]))
        #expect(sealing.open(sealed, userID: userID, provider: .apple, subject: Self.subject) == issued)
        #expect(sealing.open(sealed, userID: "someone-else", provider: .apple, subject: Self.subject) == nil)
        #expect(ProviderTokenSealing(keys: DataKeys([SystemRandomSource().bytes(32)])).open(sealed, userID: userID, provider: .apple, subject: Self.subject) == nil)
        setup.expectNoSecretLeaked([signedIn])
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aRefusedOrForeignCodeSignsNobodyIn(backend: FlowWorld.Backend) throws {
        let setup = try Setup(backend)
        let unknown = setup.world.run("signin", ["provider": "apple", "idToken": .string(setup.world.appleToken(subject: Self.subject)),
                                                 "authorizationCode": "never-minted"])
        #expect(unknown.errorCode == "AUTHORIZATION_CODE_INVALID", "\(unknown.stdoutText)")
        #expect(unknown.responseBody?["error"]?["status"]?.int64Value == 401)
        let foreign = setup.signIn(codeFor: "000999.someone.else")
        #expect(foreign.errorCode == "AUTHORIZATION_CODE_INVALID", "\(foreign.stdoutText)")
        let google = setup.world.run("signin", ["provider": "google", "idToken": .string(setup.world.googleToken(subject: "g")),
                                                "authorizationCode": "x"])
        #expect(google.errorCode == "INVALID_REQUEST")
        setup.apple.server.setUnavailable(true)
        let down = setup.signIn()
        #expect(down.errorCode == "PROVIDER_UNAVAILABLE" && down.responseBody?["error"]?["status"]?.int64Value == 502, "\(down.stdoutText)")
        #expect(down.responseBody?["error"]?["retryable"] == true)
        setup.apple.server.stop()
        let unreachable = setup.signIn()
        #expect(unreachable.errorCode == "PROVIDER_UNAVAILABLE", "connection refused: \(unreachable.stdoutText)")
        #expect(try setup.world.allItems().allSatisfy { !($0["PK"]?.stringValue ?? "").hasPrefix("USER#") }, "no user was created")
        setup.expectNoSecretLeaked([unknown, foreign, down, unreachable])
    }

    @Test func aCodeWithoutApplesServerConfigurationIsProviderNotConfigured() throws {
        let world = FlowWorld()
        let output = world.run("signin", ["provider": "apple", "idToken": .string(world.appleToken(subject: Self.subject)),
                                          "authorizationCode": "code"])
        #expect(output.errorCode == "PROVIDER_NOT_CONFIGURED" && output.responseBody?["error"]?["status"]?.int64Value == 400)
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func deletionRevokesAtAppleFirstAndStopsWhenAppleIsDown(backend: FlowWorld.Backend) throws {
        let setup = try Setup(backend)
        let body = try #require(setup.signIn().responseBody)
        let userID = try #require(body["user"]?["id"]?.stringValue)
        let accessToken = try #require(body["tokens"]?["accessToken"])
        let issued = try #require(setup.apple.server.issuedRefreshTokens.first)

        setup.apple.server.setUnavailable(true)
        let refused = setup.world.run("delete-account", ["accessToken": accessToken])
        #expect(refused.errorCode == "PROVIDER_UNAVAILABLE" && refused.responseBody?["error"]?["status"]?.int64Value == 502, "\(refused.stdoutText)")
        let profile = try setup.world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE"))
        #expect(profile != nil && profile?["deletionRequestedAt"] == nil, "the account is intact, not even marked")
        #expect(try setup.storedToken(of: userID) != nil)
        #expect(setup.world.run("sessions", ["accessToken": accessToken]).errorCode == nil, "the session still works")

        setup.apple.server.setUnavailable(false)
        let deleted = setup.world.run("delete-account", ["accessToken": accessToken])
        #expect(deleted.responseBody == ["deleted": true, "userId": .string(userID)], "\(deleted.stdoutText)")
        #expect(setup.apple.server.revocations == [DevAppleServer.Revocation(clientID: TestIssuer.appleAudience, token: issued, tokenTypeHint: "refresh_token")])
        #expect(try setup.storedToken(of: userID) == nil)
        try AccountDeletionTests.expectNoTrace(of: userID, links: [TableKey(pk: "IDENTITY#apple#\(Self.subject)", sk: "LINK")], emails: [],
                                               in: setup.world, fullScan: false)
        setup.expectNoSecretLeaked([refused, deleted])
    }

    /// On DynamoDB through a counting proxy: the unlink costs the three requests docs/aws-backends.md counts.
    @Test(arguments: FlowWorld.Backend.allCases)
    func unlinkingAppleRevokesFirstAndStopsWhenAppleIsDown(backend: FlowWorld.Backend) throws {
        let proxy = backend == .dynamoDB ? try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint) : nil
        defer { proxy?.stop() }
        let setup = try Setup(backend, extra: proxy.map { ["AUTH_DYNAMODB_ENDPOINT": $0.endpoint] } ?? [:])
        let google = setup.world.signIn(token: setup.world.googleToken(subject: "g-unlink", email: "u@example.com"))
        let userID = try #require(google["user"]?["id"]?.stringValue)
        let accessToken = try #require(google["tokens"]?["accessToken"])
        let linked = setup.world.run("link-provider", ["accessToken": accessToken, "provider": "apple",
                                                       "idToken": .string(setup.world.appleToken(subject: Self.subject))])
        #expect(linked.errorCode == nil, "\(linked.stdoutText)")
        // The code exchange of a later Apple sign-in keeps the token for this user.
        #expect(setup.signIn().responseBody?["user"]?["id"]?.stringValue == userID)
        #expect(try setup.storedToken(of: userID) != nil)

        setup.apple.server.setUnavailable(true)
        let refused = setup.world.run("link-provider", ["accessToken": accessToken, "provider": "apple", "action": "unlink"])
        #expect(refused.errorCode == "PROVIDER_UNAVAILABLE", "\(refused.stdoutText)")
        #expect(try setup.world.table().getItem(TableKey(pk: "IDENTITY#apple#\(Self.subject)", sk: "LINK")) != nil, "still linked")
        #expect(try setup.storedToken(of: userID) != nil)

        setup.apple.server.setUnavailable(false)
        let before = proxy?.operations.count ?? 0
        let unlinked = setup.world.run("link-provider", ["accessToken": accessToken, "provider": "apple", "action": "unlink"])
        #expect(unlinked.responseBody?["user"]?["identities"]?.arrayValue?.count == 1, "\(unlinked.stdoutText)")
        if let proxy {
            #expect(Array(proxy.operations.dropFirst(before)) == ["Query", "GetItem", "TransactWriteItems"])
        }
        #expect(setup.apple.server.revocations.map(\.token) == setup.apple.server.issuedRefreshTokens)
        #expect(try setup.storedToken(of: userID) == nil)
        // Unlinking Google (nothing stored) asks Apple nothing.
        setup.expectNoSecretLeaked([refused, unlinked])
    }

    @Test func theOperatorsDeletionRevokesFirstToo() throws {
        let setup = try Setup(.local)
        let userID = try #require(setup.signIn().responseBody?["user"]?["id"]?.stringValue)
        let services = try AuthServices(configuration: AuthConfiguration.fromEnvironment(setup.world.environment), logger: CapturedLog().logger)
        setup.apple.server.setUnavailable(true)
        #expect(throws: AuthError.self) { try services.administration.deleteUser(userID, logger: CapturedLog().logger) }
        #expect(try services.administration.describeUser(userID)?["user"] != nil, "nothing deleted")
        setup.apple.server.setUnavailable(false)
        #expect(try services.administration.deleteUser(userID, logger: CapturedLog().logger))
        #expect(setup.apple.server.revocations.count == 1)
    }
}
