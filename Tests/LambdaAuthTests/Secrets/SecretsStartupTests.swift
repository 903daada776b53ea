import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// `AUTH_SECRETS`: secrets read once at start from Secrets Manager or SSM (moto_server), driving a
/// whole sign-in; and every way the read can fail, each a CONFIG_ERROR naming the source and never
/// a value, through `/runtime/init/error` under the Runtime API and as the response on stdin.
@Suite struct SecretsStartupTests {
    static let secretText = "0123456789abcdef-credentials-secret"

    /// Creates a secret (Secrets Manager) or a SecureString parameter (SSM) on moto holding
    /// `text`; returns the `AUTH_SECRETS` value naming it.
    static func store(_ text: String, in store: SecretSource.Store) throws -> String {
        let moto = try MotoServer.shared()
        let suffix = SystemRandomSource().bytes(8).hexString
        switch store {
        case .secretsManager:
            let client = AWSJSONClient(service: SecretSource.Store.secretsManager.service, endpoint: moto.endpoint,
                                       region: MotoServer.region, credentials: MotoServer.credentials, http: CurlHTTPClient(),
                                       sleeper: NoSleeper())
            let name = "lambda-auth-secrets-test/\(suffix)"
            // The token makes a CreateSecret retried after a timeout the same request, not a duplicate.
            _ = try client.call("CreateSecret", ["Name": .string(name), "SecretString": .string(text),
                                                 "ClientRequestToken": .string("create-\(suffix)-0000000000000000")])
            return "secretsmanager:" + name
        case .ssm:
            let client = AWSJSONClient(service: SecretSource.Store.ssm.service, endpoint: moto.endpoint, region: MotoServer.region,
                                       credentials: MotoServer.credentials, http: CurlHTTPClient(), sleeper: NoSleeper())
            let name = "/lambda-auth-secrets-test/\(suffix)"
            _ = try client.call("PutParameter", ["Name": .string(name), "Value": .string(text), "Type": "SecureString",
                                                 "Overwrite": true])
            return "ssm:" + name
        }
    }

    static func environment(secrets: String, endpoint: String) -> [String: String] {
        ["AUTH_SECRETS": secrets, "AUTH_SECRETS_ENDPOINT": endpoint, "AWS_REGION": MotoServer.region,
         "AWS_ACCESS_KEY_ID": MotoServer.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": MotoServer.credentials.secretAccessKey]
    }

    // MARK: the source and the document

    @Test func theSourceIsSecretsManagerOrSSM() throws {
        #expect(try SecretSource("secretsmanager:app/keys") == SecretSource("secretsmanager:app/keys"))
        #expect(try SecretSource("ssm:/app/keys").store == .ssm)
        #expect(try SecretSource("ssm:/app/keys").label == "AUTH_SECRETS=ssm:/app/keys")
        for bad in ["vault:x", "ssm:", "secretsmanager", ""] {
            #expect(throws: AuthError.self, "\(bad)") { try SecretSource(bad) }
        }
    }

    @Test func theSecretIsAJSONObjectOfAllowedStringVariablesThatTheEnvironmentDoesNotAlsoSet() throws {
        let source = try SecretSource("ssm:/x")
        #expect(try source.variables(from: #"{"AUTH_CREDENTIALS_SECRET":"s3cr3t-s3cr3t-s3cr3t"}"#, environment: ["AUTH_CREDENTIALS_SECRET": ""])
            == ["AUTH_CREDENTIALS_SECRET": "s3cr3t-s3cr3t-s3cr3t"])
        func refusal(_ text: String, environment: [String: String] = [:]) -> String? {
            do {
                _ = try source.variables(from: text, environment: environment)
                return nil
            } catch {
                #expect(error.code == .configError)
                return error.message
            }
        }
        #expect(refusal("s3cr3t-not-json") == "AUTH_SECRETS=ssm:/x: the value is not a JSON object")
        #expect(refusal(#"["s3cr3t"]"#) == "AUTH_SECRETS=ssm:/x: the value is not a JSON object")
        #expect(refusal(#"{"AUTH_STORE":"s3cr3t"}"#)?.hasPrefix("AUTH_SECRETS=ssm:/x: AUTH_STORE is not a variable a secret may set") == true)
        #expect(refusal(#"{"AUTH_SIGNING_KEYS":7}"#) == "AUTH_SECRETS=ssm:/x: AUTH_SIGNING_KEYS must be a string")
        #expect(refusal(#"{"AUTH_SIGNING_KEYS":"s3cr3t"}"#, environment: ["AUTH_SIGNING_KEYS": "other"])
            == "AUTH_SECRETS=ssm:/x: AUTH_SIGNING_KEYS is also set in the environment; set it in one place")
    }

    // MARK: a whole sign-in

    @Test(arguments: [SecretSource.Store.secretsManager, .ssm], FlowWorld.Backend.allCases)
    func secretsFromAWSDriveAFullSignIn(_ store: SecretSource.Store, _ backend: FlowWorld.Backend) throws {
        let moto = try MotoServer.shared()
        let (signing, next) = (AccessTokenKey.generate(), AccessTokenKey.generate())
        let document: JSONValue = ["AUTH_SIGNING_KEYS": .string(signing.pemRepresentation + "\n" + next.pemRepresentation),
                                   "AUTH_CREDENTIALS_SECRET": .string(Self.secretText)]
        let secrets = try Self.store(document.serialized(), in: store)
        var extra = Self.environment(secrets: secrets, endpoint: moto.endpoint)
        extra["AUTH_SIGNING_KEY"] = ""
        let world = try FlowWorld(extra, backend: backend)

        let body = world.signIn(token: world.googleToken(subject: "secrets-\(store.rawValue)"))
        let token = try #require(body["tokens"]?["accessToken"]?.stringValue)
        let encodedHeader = try #require(token.split(separator: ".").first)
        let header = try JSONValue.parse(try #require(Base64.urlDecoded(encodedHeader)))
        #expect(header["kid"] == .string(signing.keyID), "not signed by the secret's first key")
        #expect(world.run("sessions", ["accessToken": .string(token)]).responseBody?["sessions"]?.arrayValue?.count == 1)
        let published = world.run("well-known", ["document": "jwks"]).json?["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue }
        #expect(published == [signing.keyID, next.keyID])
        #expect(body["credentials"]?["accessKeyId"]?.stringValue?.hasPrefix("ASIA") == true)
        let logs = world.logs.joined()
        #expect(logs.contains("AUTH_SECRETS=\(secrets)"), "the start does not say where its secrets came from")
        #expect(!logs.contains(Self.secretText) && !logs.contains("PRIVATE KEY"), "a secret reached the log")
    }

    // MARK: failures at start

    enum Failure: String, CaseIterable, CustomStringConvertible {
        case missingSecret, missingParameter, notJSON, denied, unknownVariable, alsoInEnvironment
        var description: String { rawValue }
    }

    /// The environment of a start that must fail, and the message it must fail with.
    static func failingStart(_ failure: Failure) throws -> (environment: [String: String], message: String, stub: LoopbackHTTPServer?) {
        let moto = try MotoServer.shared()
        let suffix = SystemRandomSource().bytes(6).hexString
        switch failure {
        case .missingSecret:
            let source = "secretsmanager:lambda-auth-absent/\(suffix)"
            return (environment(secrets: source, endpoint: moto.endpoint), "AUTH_SECRETS=\(source): secret not found", nil)
        case .missingParameter:
            let source = "ssm:/lambda-auth-absent/\(suffix)"
            return (environment(secrets: source, endpoint: moto.endpoint), "AUTH_SECRETS=\(source): parameter not found", nil)
        case .notJSON:
            let source = try store("\(secretText) is not JSON", in: .secretsManager)
            return (environment(secrets: source, endpoint: moto.endpoint), "AUTH_SECRETS=\(source): the value is not a JSON object", nil)
        case .denied:
            // moto allows everything: a stub in its place answers as IAM would without the permission.
            let stub = try LoopbackHTTPServer { _ in
                .json(["__type": "AccessDeniedException",
                       "Message": "User: arn:aws:sts::123456789012:assumed-role/fn/x is not authorized to perform: ssm:GetParameter"],
                      status: 400, headers: [("Content-Type", "application/x-amz-json-1.1")])
            }
            let source = "ssm:/lambda-auth/keys"
            return (environment(secrets: source, endpoint: stub.baseURL), "AUTH_SECRETS=\(source): access denied (AccessDeniedException)", stub)
        case .unknownVariable:
            let source = try store(#"{"AUTH_STORE":"\#(secretText)"}"#, in: .ssm)
            return (environment(secrets: source, endpoint: moto.endpoint),
                    "AUTH_SECRETS=\(source): AUTH_STORE is not a variable a secret may set (\(SecretVariables.names.joined(separator: ", ")))", nil)
        case .alsoInEnvironment:
            let source = try store(#"{"AUTH_CREDENTIALS_SECRET":"\#(secretText)"}"#, in: .secretsManager)
            var environment = environment(secrets: source, endpoint: moto.endpoint)
            environment["AUTH_CREDENTIALS_SECRET"] = "another-secret-another-secret"
            return (environment, "AUTH_SECRETS=\(source): AUTH_CREDENTIALS_SECRET is also set in the environment; set it in one place", nil)
        }
    }

    @Test(arguments: Failure.allCases)
    func aFailedReadIsAnInitErrorNamingTheSource(_ failure: Failure) throws {
        let (environment, message, stub) = try Self.failingStart(failure)
        defer { stub?.stop() }
        let peer = try RuntimeAPIPeer()
        defer { peer.stop() }
        let output = try ProcessRunner.run(ProcessRunner.executable("signin"),
                                           environment: environment.merging(["AWS_LAMBDA_RUNTIME_API": peer.address]) { $1 })
        #expect(output.exitCode != 0 && output.signal == nil)
        let posts = peer.posts
        try #require(posts.count == 1, "\(output.stderrText.suffix(600))")
        #expect(posts[0].kind == .initError)
        #expect(posts[0].errorType == "Runtime.ConfigError")
        #expect(posts[0].json?["errorMessage"] == .string(message))
        #expect(peer.nextRequestTimes.isEmpty, "asked for an event despite a failed init")
        #expect(!output.stderrText.contains(Self.secretText), "the secret's value reached the log")
        if failure == .denied { #expect(stub?.requestCount == 1, "a refusal is not retried") }
    }

    @Test(arguments: [Failure.missingSecret, .notJSON])
    func onStdinTheFailureIsTheConfigErrorResponse(_ failure: Failure) throws {
        let (environment, message, _) = try Self.failingStart(failure)
        let output = try ProcessRunner.run(ProcessRunner.executable("sessions"), environment: environment,
                                           stdin: Array(#"{"accessToken":"x"}"#.utf8))
        #expect(output.exitCode == 0)
        #expect(output.json?["error"]?["code"] == "CONFIG_ERROR")
        #expect(output.json?["error"]?["message"] == .string(message))
        #expect(!output.stdoutText.contains(Self.secretText) && !output.stderrText.contains(Self.secretText))
    }

    @Test func anEndpointOverrideMustNotSendSecretsInClearAcrossANetwork() throws {
        let output = try ProcessRunner.run(ProcessRunner.executable("signin"),
                                           environment: Self.environment(secrets: "ssm:/x", endpoint: "http://secrets.example.com"),
                                           stdin: Array("{}".utf8))
        #expect(output.json?["error"]?["message"] == "AUTH_SECRETS_ENDPOINT may use http:// only for a loopback address")
    }
}
