@testable import LambdaAuth
import LambdaAuthTestSupport
import Logging
import Testing

/// `Events/streams/`: stream batches as Lambda hands them to `events` (recorded from the local
/// store's change log after real flows), replayed as the executable reads them: each publishes
/// exactly these events, with nothing to redeliver.
@Suite struct StreamSampleTests {
    static let expected: [String: [AuthEvent.EventType]] = [
        "signin-new-user.json": [.userCreated, .identityLinked, .sessionStarted],
        "link-and-unlink.json": [.identityLinked, .identityUnlinked],
        "sign-in-evicts-a-session.json": [.sessionStarted, .sessionStarted, .sessionEnded],
        "refresh-then-reuse.json": [.sessionEnded],
        "guest-signin.json": [.userCreated, .sessionStarted],
        "signin-second-user.json": [.userCreated, .identityLinked, .sessionStarted],
        "global-signout.json": [.sessionStarted, .sessionEnded, .sessionEnded],
    ]

    @Test func everySampleIsListedAndPublishesItsEvents() throws {
        let directory = TestSupport.packageRoot + "/Events/streams"
        let samples = try FileSystem.listDirectory(directory).filter { $0.hasSuffix(".json") }.sorted()
        #expect(samples == Self.expected.keys.sorted())
        for sample in samples {
            let decoded = EventCodec.decode(try FileSystem.readFile(directory + "/" + sample))
            let request = try decoded.request.get()
            let bridge = EventsHandlerTests.FakeEventBridge()
            let handler = try EventsHandler.fromEnvironment(EventsHandlerTests.environment, http: bridge, sleeper: NoSleeper())
            let answer = try handler.handle(request, context: InvocationContext(requestID: sample, logger: Logger(label: "samples")))
            #expect(answer.body == ["batchItemFailures": []], "\(sample)")
            #expect(bridge.accepted.compactMap { $0["type"]?.stringValue } == Self.expected[sample]?.map(\.rawValue), "\(sample)")
        }
        // The reasons the revoking writes recorded.
        let reasons = try ["sign-in-evicts-a-session.json", "refresh-then-reuse.json", "global-signout.json"].flatMap { sample in
            try (try JSONValue.parse(try FileSystem.readFile(directory + "/" + sample)))["Records"]!.arrayValue!.compactMap { record in
                ItemEvents.event(for: try ItemChange(streamRecord: record), options: .init(source: "x"))?.data["reason"]
            }
        }
        #expect(reasons == ["evicted", "reuse", "signout", "signout"])
    }
}
