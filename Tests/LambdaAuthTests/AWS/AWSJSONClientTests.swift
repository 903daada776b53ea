import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// The JSON-protocol client on its own, for a service other than DynamoDB: Secrets Manager's
/// shape (JSON 1.1, `secretsmanager.` targets), against a scripted loopback peer (signing, error
/// bodies, retries) and against moto_server's real Secrets Manager and SSM. DynamoDB's mapping of
/// the same answers is DynamoDBFaultTests'.
@Suite struct AWSJSONClientTests {
    static let secretsManager = SecretSource.Store.secretsManager.service
    static let ssm = SecretSource.Store.ssm.service
    static let credentials = AWSCredentials(accessKeyID: "AKIDJSONCLIENT", secretAccessKey: "json-client-secret", sessionToken: "session")

    static func client(_ endpoint: String, service: AWSJSONClient.Service = secretsManager,
                       sleeper: any Sleeper = RecordingSleeper()) -> AWSJSONClient {
        AWSJSONClient(service: service, endpoint: endpoint, region: "eu-west-1", credentials: credentials,
                      http: CurlHTTPClient(), random: RepeatingRandomSource(byte: 0xFF), sleeper: sleeper)
    }

    static func error(_ type: String, status: Int = 400, message: String = "injected") -> LoopbackHTTPServer.Response {
        .json(["__type": .string("com.amazonaws.secretsmanager#\(type)"), "message": .string(message)], status: status,
              headers: [("Content-Type", "application/x-amz-json-1.1")])
    }

    static func refusal(_ call: () throws(AWSCallError) -> JSONValue) -> AWSServiceError? {
        do {
            _ = try call()
        } catch {
            if case .refused(let answer) = error { return answer }
            Issue.record("expected a refusal, got \(error)")
            return nil
        }
        Issue.record("expected a refusal, got an answer")
        return nil
    }

    @Test func callsAreSignedJSON11RequestsThatTheServiceCanVerify() throws {
        let server = try LoopbackHTTPServer { _ in .json(["Name": "app/keys", "SecretString": "s3cr3t"]) }
        defer { server.stop() }
        let answer = try Self.client(server.baseURL).call("GetSecretValue", ["SecretId": "app/keys"])
        #expect(answer["SecretString"] == "s3cr3t")

        let request = try #require(server.requests.first)
        #expect(request.method == "POST" && request.path == "/")
        #expect(request.headers["content-type"] == "application/x-amz-json-1.1")
        #expect(request.headers["x-amz-target"] == "secretsmanager.GetSecretValue")
        #expect(request.headers["x-amz-security-token"] == "session")
        #expect(try JSONValue.parse(request.body) == ["SecretId": "app/keys"])
        let authorization = try #require(request.headers["authorization"].flatMap(SigV4.Authorization.init(header:)))
        #expect(authorization.accessKeyID == "AKIDJSONCLIENT" && authorization.service == "secretsmanager"
                && authorization.region == "eu-west-1")
        #expect(Set(["content-type", "host", "x-amz-date", "x-amz-security-token", "x-amz-target"]).isSubset(of: authorization.signedHeaders))
        // The service's side: the canonical request rebuilt from what arrived, signed headers only.
        let canonical = try SigV4.canonicalRequest(
            method: request.method, url: server.baseURL + request.target,
            headers: authorization.signedHeaders.map { (name: $0, value: request.headers[$0] ?? "") },
            payloadHash: SigV4.payloadHash(request.body), normalizesPath: true)
        let date = try #require(request.headers["x-amz-date"])
        #expect(SigV4.signature(for: canonical, secret: "json-client-secret", amzDate: date, region: "eu-west-1",
                                service: "secretsmanager") == authorization.signature)
    }

    @Test(arguments: [
        ("namespaced __type", AWSJSONClientTests.error("ResourceNotFoundException", message: "Secrets Manager can't find the specified secret."),
         400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."),
        ("x-amzn-ErrorType header, Message", LoopbackHTTPServer.Response.json(
            ["Message": "User is not authorized"], status: 400,
            headers: [("x-amzn-ErrorType", "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.coral.service/")]),
         400, "AccessDeniedException", "User is not authorized"),
        ("no type at all", LoopbackHTTPServer.Response(status: 403, text: "<html>Forbidden</html>"), 403, "", ""),
    ])
    func errorAnswersAreParsedAndReturnedAtOnce(name: String, response: LoopbackHTTPServer.Response, status: Int,
                                                type: String, message: String) throws {
        let server = try LoopbackHTTPServer { _ in response }
        defer { server.stop() }
        let sleeper = RecordingSleeper()
        let client = Self.client(server.baseURL, sleeper: sleeper)
        let answer = try #require(Self.refusal { () throws(AWSCallError) -> JSONValue in try client.call("GetSecretValue", ["SecretId": "x"]) })
        #expect(answer.status == status && answer.type == type && answer.message == message, "\(name)")
        #expect(answer.description == (type.isEmpty ? "HTTP \(status)" : "\(type): \(message)"), "\(name)")
        #expect(server.requestCount == 1 && sleeper.delays.isEmpty, "\(name): a refusal is not retried")
    }

    @Test func throttlingAndOutagesAreRetriedWithBackoffThenSucceed() throws {
        let server = try LoopbackHTTPServer.scripted(
            [Self.error("ThrottlingException"), LoopbackHTTPServer.Response(status: 503, text: "busy"), Self.error("InternalFailure", status: 500)],
            otherwise: .json(["SecretString": "s"]))
        defer { server.stop() }
        let sleeper = RecordingSleeper()
        let client = Self.client(server.baseURL, sleeper: sleeper)
        #expect(try client.call("GetSecretValue", ["SecretId": "x"])["SecretString"] == "s")
        #expect(server.requestCount == 4 && client.requestCount == 4)
        // Random bytes 0xFF take the whole window: 50 ms, 100 ms, 200 ms.
        #expect(sleeper.delays.map { ($0 * 1000).rounded() } == [50, 100, 200])
    }

    @Test func persistentFaultsExhaustTheRetriesWithTheLastReason() throws {
        let server = try LoopbackHTTPServer { _ in AWSJSONClientTests.error("InternalServiceError", status: 500, message: "down") }
        defer { server.stop() }
        let sleeper = RecordingSleeper()
        let client = Self.client(server.baseURL, sleeper: sleeper)
        #expect {
            try client.call("GetSecretValue", ["SecretId": "x"])
        } throws: { error in
            guard case AWSCallError.exhausted(let reason) = error else { return false }
            return reason == "Secrets Manager GetSecretValue failed after 4 attempts: InternalServiceError: down"
        }
        #expect(server.requestCount == 4)
        #expect(sleeper.delays.map { ($0 * 1000).rounded() } == [50, 100, 200])
    }

    @Test func aServiceDecidesWhatElseIsRetryable() throws {
        var service = Self.secretsManager
        service.retryableErrorTypes = []
        service.isRetryable = { $0.type == "ResourceConflictException" && $0.message.contains("in progress") }
        let server = try LoopbackHTTPServer.scripted(
            [Self.error("ResourceConflictException", message: "rotation in progress"), Self.error("ThrottlingException")],
            otherwise: .json([:]))
        defer { server.stop() }
        let client = Self.client(server.baseURL, service: service)
        // The first answer is retried by the service's rule; throttling, no longer listed, is refused.
        let answer = try #require(Self.refusal { () throws(AWSCallError) -> JSONValue in try client.call("PutSecretValue", [:]) })
        #expect(answer.type == "ThrottlingException")
        #expect(server.requestCount == 2)
    }

    @Test func answersThatAreNotJSONObjectsFailWithoutRetry() throws {
        for body in ["not json", "[1]", "\"text\""] {
            let server = try LoopbackHTTPServer { _ in .init(status: 200, text: body) }
            defer { server.stop() }
            let client = Self.client(server.baseURL)
            #expect(throws: AWSCallError.self, "\(body)") { try client.call("GetSecretValue", [:]) }
            do {
                _ = try client.call("GetSecretValue", [:])
            } catch {
                #expect(error.description == "Secrets Manager GetSecretValue answered 200 with a body that is not a JSON object")
                if case .failed = error {} else { Issue.record("\(body): expected .failed, got \(error)") }
            }
            #expect(server.requestCount == 2, "\(body): one request per call, no retry")
        }
    }

    /// The real protocol of two more services, through the same client DynamoDB uses: what
    /// `AUTH_SECRETS=secretsmanager:` and `ssm:` will read.
    @Test func secretsManagerAndSSMOnMoto() throws {
        let moto = try MotoServer.shared()
        let suffix = SystemRandomSource().bytes(6).hexString
        let secrets = AWSJSONClient(service: Self.secretsManager, endpoint: moto.endpoint, region: MotoServer.region,
                                    credentials: MotoServer.credentials, http: CurlHTTPClient(), sleeper: NoSleeper())
        let document: JSONValue = ["AUTH_CREDENTIALS_SECRET": "0123456789abcdef"]
        let name = "lambda-auth-test/\(suffix)"
        // The token makes a CreateSecret retried after a timeout the same request, not a duplicate.
        _ = try secrets.call("CreateSecret", ["Name": .string(name), "SecretString": .string(document.serialized()),
                                              "ClientRequestToken": .string("create-\(suffix)-00000000000000000000")])
        let value = try secrets.call("GetSecretValue", ["SecretId": .string(name)])
        #expect(try value["SecretString"]?.stringValue.map { try JSONValue.parse(Array($0.utf8)) } == document)
        let missing = Self.refusal { () throws(AWSCallError) -> JSONValue in try secrets.call("GetSecretValue", ["SecretId": .string(name + "-missing")]) }
        #expect(missing?.type == "ResourceNotFoundException")
        #expect(secrets.requestCount == 3)

        let ssm = AWSJSONClient(service: Self.ssm, endpoint: moto.endpoint, region: MotoServer.region,
                                credentials: MotoServer.credentials, http: CurlHTTPClient(), sleeper: NoSleeper())
        let parameter = "/lambda-auth-test/\(suffix)"
        // Overwrite: a PutParameter retried after a timeout on a busy machine must not fail as a duplicate.
        _ = try ssm.call("PutParameter", ["Name": .string(parameter), "Value": .string(document.serialized()), "Type": "SecureString",
                                          "Overwrite": true])
        let read = try ssm.call("GetParameter", ["Name": .string(parameter), "WithDecryption": true])
        #expect(read["Parameter"]?["Value"] == .string(document.serialized()))
        let absent = Self.refusal { () throws(AWSCallError) -> JSONValue in try ssm.call("GetParameter", ["Name": .string(parameter + "-missing")]) }
        #expect(absent?.type == "ParameterNotFound")
    }
}
