import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// A provider of AUTH_OIDC_PROVIDERS through every handler that takes a proof (contract section
/// 14): sign-in, linking by verified email, link and unlink, re-authentication for deletion, and a
/// guest upgrading to it, on both backends, with its keys found through its
/// discovery document on a loopback server. Everything Google has, through the provider registry.
@Suite struct OIDCSignInTests {
    /// The provider's issuer: its JWKS and discovery document on loopback, its tokens minted at
    /// the flow world's fixed time.
    final class Issuer: Sendable {
        let test = TestIssuer(keyIndex: 2, keyID: "okta-key-1")
        let server: LoopbackHTTPServer

        init() throws {
            let jwks = test.jwks
            let box = ServerAddress()
            server = try LoopbackHTTPServer { request in
                switch request.path {
                case "/oauth2/default/.well-known/openid-configuration":
                    return .json(["issuer": .string(box.base + "/oauth2/default"), "jwks_uri": .string(box.base + "/oauth2/default/v1/keys")])
                case "/oauth2/default/v1/keys": return .json(jwks)
                default: return LoopbackHTTPServer.Response(status: 404)
                }
            }
            box.set(server.baseURL)
        }

        deinit { server.stop() }

        var issuer: String { server.baseURL + "/oauth2/default" }
        var configuration: String {
            JSONValue.array([["name": "okta", "issuer": .string(issuer), "audiences": ["okta-app"]]]).serialized()
        }

        func token(subject: String, email: String? = "okta-user@example.com", verified: Bool = true, issuedAfter: Int64 = 0) -> String {
            let issuedAt = test.now + issuedAfter
            var claims: [String: JSONValue] = ["iss": .string(issuer), "aud": "okta-app", "sub": .string(subject),
                                               "iat": .number(issuedAt), "exp": .number(issuedAt + 3600)]
            if let email {
                claims["email"] = .string(email)
                claims["email_verified"] = .bool(verified)
            }
            return test.token(claims)
        }
    }

    /// The server's address, known only once it listens.
    final class ServerAddress: @unchecked Sendable {
        private var value = ""
        var base: String { value }
        func set(_ address: String) { value = address }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func aConfiguredProviderDoesEverythingGoogleDoes(backend: FlowWorld.Backend) throws {
        let okta = try Issuer()
        let world = try FlowWorld(["AUTH_OIDC_PROVIDERS": okta.configuration, "AUTH_GUEST": "on"], backend: backend)

        // Sign-in creates a user whose identity is the provider's subject.
        let signedIn = world.run("signin", ["provider": "okta", "idToken": .string(okta.token(subject: "00u1okta"))])
        let body = try #require(signedIn.responseBody, "\(signedIn.stdoutText)")
        #expect(body["isNewUser"] == true, "\(signedIn.stdoutText) \(signedIn.stderrText.suffix(500))")
        let identities = body["user"]?["identities"]?.arrayValue ?? []
        #expect(identities.map { $0["provider"] } == ["okta"] && identities.first?["subject"] == "00u1okta")
        let userID = try #require(body["user"]?["id"]?.stringValue)
        let accessToken = try #require(body["tokens"]?["accessToken"]?.stringValue)
        #expect(world.run("signin", ["provider": "okta", "idToken": .string(okta.token(subject: "00u1okta"))]).responseBody?["user"]?["id"]
            == .string(userID), "a returning user")

        // Google's errors, exactly: another audience, a provider nobody configured.
        var otherAudience = okta.test.claims(audience: "okta-app")
        otherAudience["iss"] = .string(okta.issuer)
        otherAudience["aud"] = "someone-else"
        #expect(world.run("signin", ["provider": "okta", "idToken": .string(okta.test.token(otherAudience))]).errorCode == "INVALID_AUDIENCE")
        #expect(world.run("signin", ["provider": "auth0", "idToken": .string(okta.token(subject: "x"))]).errorCode == "UNSUPPORTED_PROVIDER")

        // A Google identity with the same verified email joins the user (AUTH_LINK_BY_EMAIL=verified).
        let google = world.signIn(token: world.googleToken(subject: "google-okta-user", email: "okta-user@example.com"))
        #expect(google["user"]?["id"] == .string(userID) && google["isNewUser"] == false)

        // Unlink and link again through link-provider.
        let unlinked = world.run("link-provider", ["provider": "okta", "action": "unlink", "accessToken": .string(accessToken)])
        #expect(unlinked.responseBody?["user"]?["identities"]?.arrayValue?.map { $0["provider"] } == ["google"], "\(unlinked.stdoutText)")
        let linked = world.run("link-provider", ["provider": "okta", "idToken": .string(okta.token(subject: "00u1okta")),
                                                 "accessToken": .string(accessToken)])
        #expect(linked.responseBody?["user"]?["identities"]?.arrayValue?.count == 2, "\(linked.stdoutText)")

        // A guest upgrades to it and keeps its user id.
        let guest = try #require(world.run("signin", ["provider": "guest"]).responseBody)
        let upgraded = world.run("link-provider", ["provider": "okta", "idToken": .string(okta.token(subject: "00u2guest", email: nil)),
                                                   "accessToken": guest["tokens"]!["accessToken"]!])
        #expect(upgraded.responseBody?["user"]?["id"] == guest["user"]?["id"] && upgraded.responseBody?["user"]?["isGuest"] == nil,
                "\(upgraded.stdoutText)")

        // Re-authentication for deletion with a fresh token of it; the session is an hour old.
        world.advanceClock(by: 600)
        let stale = world.run("delete-account", ["provider": "okta", "idToken": .string(okta.token(subject: "00u1okta")),
                                                 "accessToken": .string(try #require(google["tokens"]?["accessToken"]?.stringValue))])
        #expect(stale.errorCode == "REAUTHENTICATION_REQUIRED", "a token issued 10 minutes ago is not fresh: \(stale.stdoutText)")
        let deleted = world.run("delete-account", ["provider": "okta", "idToken": .string(okta.token(subject: "00u1okta", issuedAfter: 600)),
                                                   "accessToken": .string(try #require(google["tokens"]?["accessToken"]?.stringValue))])
        #expect(deleted.responseBody?["userId"] == .string(userID), "\(deleted.stdoutText)")
        let again = world.run("signin", ["provider": "okta", "idToken": .string(okta.token(subject: "00u1okta", issuedAfter: 600))])
        #expect(again.responseBody?["isNewUser"] == true && again.responseBody?["user"]?["id"] != .string(userID))
    }

    /// A `{tenantid}` issuer speaks for many tenants, and nothing makes `sub` unique across them:
    /// one `sub` in two tenants is two identities, so two users, each identity `<tid>:<sub>`.
    @Test(arguments: FlowWorld.Backend.allCases)
    func oneSubjectInTwoTenantsIsTwoUsers(backend: FlowWorld.Backend) throws {
        let entra = try Issuer()
        let configuration = JSONValue.array([["name": "entra", "issuer": .string(entra.server.baseURL + "/{tenantid}/v2.0"),
                                              "jwksUri": .string(entra.issuer + "/v1/keys"), "audiences": ["entra-app"],
                                              "emailVerified": "never"]]).serialized()
        let world = try FlowWorld(["AUTH_OIDC_PROVIDERS": configuration], backend: backend)
        func token(tenant: String, subject: String = "AAAAAAAAAAAAAAAAAAAAAShared") -> JSONValue {
            let now = entra.test.now
            return .string(entra.test.token(["iss": .string(entra.server.baseURL + "/\(tenant)/v2.0"), "tid": .string(tenant),
                                             "aud": "entra-app", "sub": .string(subject), "iat": .number(now), "exp": .number(now + 3600)]))
        }
        let contoso = "3f1c2a54-7e0b-4c8d-9a61-2b5e8d4f6c10", fabrikam = "0b7d6e3a-5c1f-4a2e-8d39-71f0c4b2e9a6"

        let first = try #require(world.run("signin", ["provider": "entra", "idToken": token(tenant: contoso)]).responseBody)
        let second = try #require(world.run("signin", ["provider": "entra", "idToken": token(tenant: fabrikam)]).responseBody)
        #expect(first["isNewUser"] == true && second["isNewUser"] == true, "\(second)")
        #expect(first["user"]?["id"] != second["user"]?["id"])
        #expect(first["user"]?["identities"]?.arrayValue?.first?["subject"] == .string(contoso + ":AAAAAAAAAAAAAAAAAAAAAShared"))
        #expect(second["user"]?["identities"]?.arrayValue?.first?["subject"] == .string(fabrikam + ":AAAAAAAAAAAAAAAAAAAAAShared"))
        let again = try #require(world.run("signin", ["provider": "entra", "idToken": token(tenant: contoso)]).responseBody)
        #expect(again["user"]?["id"] == first["user"]?["id"] && again["isNewUser"] == false, "a returning user of its own tenant")

        let links = try world.allItems(at: 0).compactMap { $0["PK"]?.stringValue }.filter { $0.hasPrefix("IDENTITY#") }.sorted()
        #expect(links == ["IDENTITY#entra#\(fabrikam):AAAAAAAAAAAAAAAAAAAAAShared", "IDENTITY#entra#\(contoso):AAAAAAAAAAAAAAAAAAAAAShared"].sorted())
        // The tenant ends at the first ':', so a tid holding one could pass for another tenant's.
        #expect(world.run("signin", ["provider": "entra", "idToken": token(tenant: contoso + ":x", subject: "y")]).errorCode == "INVALID_ISSUER")
    }

    /// A returning user of a configured provider whose keys are cached costs what Google's costs
    /// on DynamoDB: the link, the user, one transaction (issue 26); and no request to the issuer.
    @Test func aReturningSignInOnDynamoDBTakesThreeRequests() throws {
        let okta = try Issuer()
        let proxy = try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint)
        defer { proxy.stop() }
        let world = try FlowWorld(["AUTH_OIDC_PROVIDERS": okta.configuration, "AUTH_DYNAMODB_ENDPOINT": proxy.endpoint], backend: .dynamoDB)
        let event: JSONValue = ["provider": "okta", "idToken": .string(okta.token(subject: "00u3counted"))]
        #expect(world.run("signin", event).responseBody?["isNewUser"] == true)
        let issuerRequests = okta.server.requestCount
        let before = proxy.operations.count
        let returning = world.run("signin", event)
        #expect(returning.responseBody?["isNewUser"] == false, "\(returning.stdoutText)")
        let operations = Array(proxy.operations.dropFirst(before))
        #expect(operations.count <= 3, "\(operations)")
        #expect(okta.server.requestCount == issuerRequests, "the keys came from the cache")
    }
}
