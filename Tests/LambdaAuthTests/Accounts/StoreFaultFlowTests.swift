import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// The handlers on DynamoDB (moto_server) behind a loopback proxy that reads through to
/// moto but answers every TransactWriteItems with a fault: after its retries the handler must
/// answer STORE_UNAVAILABLE (503, retryable) and the table must hold nothing the failed
/// invocation started to write.
@Suite(.serialized) struct StoreFaultFlowTests {
    /// TransactWriteItems requests the proxy sees for one attempt and three retries. A dropped
    /// connection shows one more: the first attempt goes out on the connection the earlier reads
    /// kept alive, and libcurl re-sends a request once, on a new connection, when a reused one
    /// closes before answering (the client's own count is pinned in DynamoDBFaultTests).
    static func expectedTransactWrites(_ fault: String) -> ClosedRange<Int> { fault == "dropped connection" ? 4...5 : 4...4 }

    static let faults: [(String, LoopbackHTTPServer.Response)] = [
        ("throttled", LoopbackHTTPServer.Response.dynamoDBError("ProvisionedThroughputExceededException")),
        ("internal error", LoopbackHTTPServer.Response.dynamoDBError("InternalServerError", status: 500)),
        ("dropped connection", .drop),
    ]

    struct FaultyWorld {
        let proxy: DynamoDBProxy
        let world: FlowWorld

        init() throws {
            proxy = try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint)
            world = try FlowWorld(["AUTH_DYNAMODB_ENDPOINT": proxy.endpoint], backend: .dynamoDB)
        }

        /// Every item in the world's table, read straight from moto.
        func items() throws -> [Item] { try world.allItems() }

        func transactWrites() -> Int { proxy.operations.filter { $0 == "TransactWriteItems" }.count }
    }

    static func expectStoreUnavailable(_ output: ProcessRunner.Output, _ fault: String,
                                       sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(output.exitCode == 0, sourceLocation: sourceLocation)
        let error = output.responseBody?["error"]
        #expect(error?["code"]?.stringValue == "STORE_UNAVAILABLE", "\(fault): \(output.stdoutText)", sourceLocation: sourceLocation)
        #expect(error?["status"]?.int64Value == 503, sourceLocation: sourceLocation)
        #expect(error?["retryable"] == .bool(true), sourceLocation: sourceLocation)
    }

    @Test(arguments: StoreFaultFlowTests.faults)
    func firstSignInLeavesNothingWhenItsTransactionKeepsFailing(fault: String, response: LoopbackHTTPServer.Response) throws {
        let faulty = try FaultyWorld()
        defer { faulty.proxy.stop() }
        faulty.proxy.inject(response, for: "TransactWriteItems")
        let token = faulty.world.googleToken(subject: "fault-new-user")
        let output = faulty.world.run("signin", ["provider": "google", "idToken": .string(token)])
        Self.expectStoreUnavailable(output, fault)
        #expect(Self.expectedTransactWrites(fault).contains(faulty.transactWrites()), "\(fault): one attempt and three retries")
        #expect(try faulty.items().isEmpty, "\(fault): no partial user")

        faulty.proxy.inject(nil, for: "TransactWriteItems")
        #expect(faulty.world.signIn(token: token)["isNewUser"] == true, "the same sign-in succeeds once the store recovers")
    }

    @Test(arguments: StoreFaultFlowTests.faults)
    func refreshLeavesTheTokenFamilyAsItWasWhenItsTransactionKeepsFailing(fault: String, response: LoopbackHTTPServer.Response) throws {
        let faulty = try FaultyWorld()
        defer { faulty.proxy.stop() }
        let signedIn = faulty.world.signIn(token: faulty.world.googleToken(subject: "fault-refresh"))
        let refreshToken = try #require(signedIn["tokens"]?["refreshToken"]?.stringValue)
        let before = try faulty.items()
        let writesBefore = faulty.transactWrites()

        faulty.proxy.inject(response, for: "TransactWriteItems")
        let output = faulty.world.run("refresh", ["refreshToken": .string(refreshToken)])
        Self.expectStoreUnavailable(output, fault)
        #expect(Self.expectedTransactWrites(fault).contains(faulty.transactWrites() - writesBefore),
                "\(fault): one attempt and three retries")
        #expect(try faulty.items() == before, "\(fault): the token is still ACTIVE, no new token, session untouched")

        faulty.proxy.inject(nil, for: "TransactWriteItems")
        let retried = faulty.world.run("refresh", ["refreshToken": .string(refreshToken)])
        #expect(retried.errorCode == nil, "the client's retry of the same token succeeds: \(retried.stdoutText)")
    }
}
