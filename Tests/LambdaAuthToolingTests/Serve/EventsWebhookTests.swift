import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `serve`'s webhook (contract section 22 on the local store): each committed change's event is
/// POSTed once, in commit order, signed as Standard Webhooks sign (checked by Python's own hmac).
@Suite struct EventsWebhookTests {
    @Test func eachNewEventIsPostedSignedInCommitOrder() throws {
        let directory = TestSupport.temporaryDirectory("events-webhook")
        defer { TestSupport.removeTree(directory) }
        let table = LocalTable(directory: directory, clock: SystemClock())
        // Before serve starts: not posted.
        try table.putItem(TableKey(pk: "USER#before", sk: "PROFILE").item)
        let receiver = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response(status: 204) }
        defer { receiver.stop() }
        let secret = Array("0123456789abcdef0123456789abcdef".utf8)
        let webhook = EventsWebhook(url: receiver.baseURL + "/hook", secret: secret, table: table,
                                    options: ItemEvents.Options(source: "https://auth.example.test"),
                                    interval: 0.05)
        try webhook.start()
        try table.putItem(TableKey(pk: "USER#u1", sk: "PROFILE").item)
        try table.putItem(TableKey(pk: "USER#u1", sk: "SESSION#s1").item.merging(["status": .s("ACTIVE")]) { $1 })
        try table.putItem(TableKey(pk: "USER#u1", sk: "REFRESH#s1.1").item)  // publishes nothing
        var waited = 0
        while receiver.requestCount < 2, waited < 100 {
            usleep(50_000)
            waited += 1
        }
        usleep(300_000)
        let requests = receiver.requests
        #expect(requests.count == 2)
        let events = requests.compactMap { try? JSONValue.parse($0.body) }
        #expect(events.map { $0["type"] } == ["user.created", "session.started"])
        #expect(events.allSatisfy { $0["subject"] == "u1" })
        for request in requests {
            let id = try #require(request.headers["webhook-id"]), timestamp = try #require(request.headers["webhook-timestamp"])
            let body = try #require(try? JSONValue.parse(request.body))
            #expect(body["id"]?.stringValue == id)
            let script = """
                import base64, hashlib, hmac, sys
                key, signed = sys.argv[1].encode(), sys.stdin.buffer.read()
                print("v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode())
                """
            let output = try ProcessRunner.run("/usr/bin/env", arguments: ["python3", "-c", script, String(decoding: secret, as: UTF8.self)],
                                               environment: Environment.current(), stdin: Array("\(id).\(timestamp).".utf8) + request.body)
            #expect(request.headers["webhook-signature"] == output.stdoutText.split(separator: "\n").first.map(String.init))
        }
    }
}
