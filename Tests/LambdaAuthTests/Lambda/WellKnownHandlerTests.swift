import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// `well-known` as its executable runs an event (in this process): the two documents on the Lambda event path (the samples in
/// Events/well-known), their cache header, direct invocations, and what an unknown path,
/// document or method answers.
@Suite struct WellKnownHandlerTests {
    static let root = FileSystem.parentDirectory(of: FileSystem.parentDirectory(of: FileSystem.parentDirectory(
        of: FileSystem.parentDirectory(of: "\(#filePath)"))))

    static func sample(_ name: String) throws -> [UInt8] {
        try FileSystem.readFile(root + "/Events/well-known/" + name)
    }

    /// After a rotation from ES256 to RS256: both published, the signing key's algorithm first.
    let keys = [AccessTokenKey.generate(.rs256), AccessTokenKey.generate(.es256)]
    var environment: [String: String] {
        ["AUTH_SIGNING_KEYS": keys.map(\.pemRepresentation).joined(separator: "\n"), "AUTH_ISSUER": "https://auth.example.test/",
         "AUTH_STORE": "/nonexistent/well-known-store"]
    }

    func run(_ event: [UInt8], environment: [String: String]? = nil) throws -> ProcessRunner.Output {
        HandlerCatalogue.wellKnown.runInProcess(environment: environment ?? self.environment, stdin: event)
    }

    @Test func servesTheJWKSAndTheDiscoveryDocumentOverHTTPEventsForFiveMinutes() throws {
        let jwks = try run(try Self.sample("http-api-v2-jwks.json"))
        #expect(jwks.json?["statusCode"] == 200)
        #expect(jwks.json?["headers"]?["cache-control"] == "public, max-age=300")
        #expect(jwks.json?["headers"]?["content-type"] == "application/json")
        let published = try #require(jwks.responseBody?["keys"]?.arrayValue)
        #expect(published.compactMap { $0["kid"]?.stringValue } == keys.map(\.keyID))
        let privateMembers = ["d", "p", "q", "dp", "dq", "qi"]
        #expect(published.allSatisfy { jwk in privateMembers.allSatisfy { jwk[$0] == nil } }, "a private part was published")
        #expect(published.map { [$0["kty"], $0["alg"], $0["use"]] } == [["RSA", "RS256", "sig"], ["EC", "ES256", "sig"]])

        let discovery = try run(try Self.sample("http-api-v2-openid-configuration.json"))
        #expect(discovery.json?["statusCode"] == 200)
        #expect(discovery.json?["headers"]?["cache-control"] == "public, max-age=300")
        #expect(discovery.responseBody?["issuer"] == "https://auth.example.test/")
        #expect(discovery.responseBody?["jwks_uri"] == "https://auth.example.test/.well-known/jwks.json")
        #expect(discovery.responseBody?["id_token_signing_alg_values_supported"] == ["RS256", "ES256"])
    }

    @Test func aStagePrefixedPathStillFindsItsDocument() throws {
        var event = try JSONValue.parse(try Self.sample("http-api-v2-jwks.json"))
        guard case .object(var fields) = event else { Issue.record("sample is not an object"); return }
        fields["rawPath"] = "/prod/.well-known/jwks.json"
        event = .object(fields)
        #expect(try run(event.serializedBytes()).json?["statusCode"] == 200)
    }

    @Test func unknownPathsDocumentsAndMethodsAreClearErrorsThatAreNotCached() throws {
        let unknown = try run(try Self.sample("error-unknown-path.json"))
        #expect(unknown.json?["statusCode"] == 404)
        #expect(unknown.json?["headers"]?["cache-control"] == "no-store")
        #expect(unknown.errorCode == "NOT_FOUND")
        #expect(unknown.responseBody?["error"]?["message"]?.stringValue?.contains("/.well-known/jwks.json") == true)

        var event = try JSONValue.parse(try Self.sample("http-api-v2-jwks.json"))
        if case .object(var fields) = event, case .object(var context) = fields["requestContext"], case .object(var http) = context["http"] {
            http["method"] = "POST"
            context["http"] = .object(http)
            fields["requestContext"] = .object(context)
            event = .object(fields)
        }
        let posted = try run(event.serializedBytes())
        #expect(posted.json?["statusCode"] == 400 && posted.errorCode == "INVALID_REQUEST")

        #expect(try run(Array(#"{"document":"keys"}"#.utf8)).errorCode == "NOT_FOUND")
        #expect(try run(Array("{}".utf8)).errorCode == "INVALID_REQUEST")
    }

    @Test func directInvocationsNameTheDocument() throws {
        let jwks = try run(try Self.sample("direct-jwks.json"))
        #expect(jwks.json?["keys"]?.arrayValue?.count == 2)
        let discovery = try run(try Self.sample("direct-openid-configuration.json"))
        #expect(discovery.json?["jwks_uri"] == "https://auth.example.test/.well-known/jwks.json")
    }

    @Test func aLocalStoreWithoutItsDevKeyYetPublishesNoKeysAndCreatesNone() throws {
        let world = FlowWorld()
        let before = world.storeSnapshot()
        let output = world.run("well-known", ["document": "jwks"])
        #expect(output.json == ["keys": []])
        #expect(world.storeSnapshot() == before)
        // Once a sign-in created the dev key, it is the one published.
        let token = try #require(world.signIn(token: world.googleToken(subject: "wk-1"))["tokens"]?["accessToken"]?.stringValue)
        let encodedHeader = try #require(token.split(separator: ".").first)
        let header = try JSONValue.parse(try #require(Base64.urlDecoded(encodedHeader)))
        #expect(world.run("well-known", ["document": "jwks"]).json?["keys"]?.arrayValue?.first?["kid"] == header["kid"])
    }
}
