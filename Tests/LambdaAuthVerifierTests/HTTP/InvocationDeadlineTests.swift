@testable import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// Outgoing requests never outlive the Lambda invocation that makes them, and a machine without
/// libcurl is a configuration error rather than an outage that DynamoDB calls would retry.
@Suite struct InvocationDeadlineTests {
    @Test func timeoutsAreCappedByWhatIsLeftOfTheInvocation() {
        #expect(InvocationDeadline.cap(3, now: 100) == .seconds(3), "outside an invocation: the request's own")
        #expect(InvocationDeadline.cap(0, now: 100) == .none)
        InvocationDeadline.withDeadline(milliseconds: 101_000) {
            #expect(InvocationDeadline.cap(3, now: 100) == .seconds(1 - InvocationDeadline.answerMargin))
            #expect(InvocationDeadline.cap(0.5, now: 100) == .seconds(0.5))
            #expect(InvocationDeadline.cap(0, now: 100) == .seconds(1 - InvocationDeadline.answerMargin), "no timeout becomes the deadline")
            #expect(InvocationDeadline.cap(3, now: 100.9) == .exhausted)
        }
    }

    @Test func aSlowPeerTimesOutAtTheDeadlineNotAtTheRequestsTimeout() throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response(body: Array("late".utf8), delaySeconds: 4) }
        defer { server.stop() }
        let started = SystemClock().now()
        let deadline = Int64((started + 1) * 1000)
        let outcome = InvocationDeadline.withDeadline(milliseconds: deadline) {
            Result { () throws(HTTPClientError) -> HTTPResponse in
                try CurlHTTPClient().send(HTTPRequest(url: server.baseURL + "/slow", timeout: 10))
            }
        }
        let elapsed = SystemClock().now() - started
        guard case .failure(.timeout) = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(elapsed < 2.5, "stopped by the 1 s deadline, not the peer's 4 s or the request's 10 s (\(elapsed) s)")
    }

    @Test func noTimeLeftMeansNoRequestIsSent() throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response(text: "ok") }
        defer { server.stop() }
        let past = Int64(SystemClock().now() * 1000) - 1
        let outcome = InvocationDeadline.withDeadline(milliseconds: past) {
            Result { () throws(HTTPClientError) -> HTTPResponse in try CurlHTTPClient().send(HTTPRequest(url: server.baseURL)) }
        }
        guard case .failure(.timeout) = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(server.requestCount == 0)
    }

    /// A client that always times out, as every request does once the invocation has no time left.
    struct TimingOut: HTTPClient {
        func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse { throw .timeout }
    }

    @Test func retriesStopWhenTheInvocationHasNoTimeLeft() {
        let sleeper = RecordingSleeper()
        let client = DynamoDBClient(endpoint: "http://127.0.0.1:9", region: "us-east-1",
                                    credentials: AWSCredentials(accessKeyID: "AKIDDEADLINE", secretAccessKey: "secret"),
                                    http: TimingOut(), random: RepeatingRandomSource(byte: 0xFF), sleeper: sleeper)
        let table = DynamoDBTable(tableName: "t", client: client, clock: FixedClock(1_800_000_000))
        let past = Int64(SystemClock().now() * 1000) - 1
        _ = InvocationDeadline.withDeadline(milliseconds: past) {
            #expect(throws: TableError.self) { try table.getItem(TableKey(pk: "USER#1", sk: "PROFILE")) }
        }
        #expect(client.requestCount == 1, "no retry after the deadline")
        #expect(sleeper.delays.isEmpty, "no backoff past the deadline")
    }

    @Test func aMissingLibcurlIsNamed() {
        guard case .failure(.libraryUnavailable(let reason)) = CurlLibrary.load(name: "libcurl-that-is-not-installed.so.4") else {
            Issue.record("loading a missing library should fail")
            return
        }
        #expect(reason.contains("libcurl-that-is-not-installed.so.4") && reason.contains("install libcurl"))
    }

    /// An HTTP client on a machine without libcurl.
    struct NoLibrary: HTTPClient {
        func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
            throw .libraryUnavailable("libcurl.so.4 cannot be loaded (install libcurl)")
        }
    }

    @Test func dynamoDBWithoutLibcurlIsAConfigurationErrorNotRetried() {
        let sleeper = RecordingSleeper()
        let client = DynamoDBClient(endpoint: "http://127.0.0.1:9", region: "us-east-1",
                                    credentials: AWSCredentials(accessKeyID: "AKIDNOLIB", secretAccessKey: "secret"),
                                    http: NoLibrary(), random: RepeatingRandomSource(byte: 0), sleeper: sleeper)
        let table = DynamoDBTable(tableName: "t", client: client, clock: FixedClock(1_800_000_000))
        do {
            _ = try table.getItem(TableKey(pk: "USER#1", sk: "PROFILE"))
            Issue.record("the read should fail")
        } catch {
            let contract = AuthError.from(error)
            #expect(contract.code == .configError, "\(contract.code)")
            #expect(contract.message.contains("libcurl"))
        }
        #expect(client.requestCount == 1, "nothing to retry")
        #expect(sleeper.delays.isEmpty)
    }
}
