import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// Email codes through real handler processes: eight racing to use one code, and what their
/// stderr and the store's files hold (never a code nor its hash; the outbox is the only plaintext).
@Suite(.serialized) struct OneTimeCodeProcessTests {
    static func httpEvent(_ body: JSONValue, sourceIP: String) -> JSONValue {
        ["version": "2.0", "routeKey": "POST /auth/otp/start", "rawPath": "/auth/otp/start",
         "requestContext": ["http": ["method": "POST", "path": "/auth/otp/start", "sourceIp": .string(sourceIP)]],
         "headers": ["content-type": "application/json"], "body": .string(body.serialized()), "isBase64Encoded": false]
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func eightProcessesRacingToUseOneCodeSignInOnce(backend: FlowWorld.Backend) throws {
        let codes = try EmailCodeWorld(backend)
        let world = codes.world
        let started = world.runProcess("otp-start", Self.httpEvent(["email": "racer@example.com"], sourceIP: "203.0.113.9"))
        #expect(started.exitCode == 0)
        #expect(started.json?["statusCode"] == 202)
        #expect(started.responseBody == ["sent": true, "expiresIn": 600])
        let code = try #require(codes.latestCode("racer@example.com"))
        let codeHash = try #require(try world.allItems(at: 0).first { $0["PK"] == .s("OTP#racer@example.com") }?["codeHash"]?.stringValue)

        let wrong = world.runProcess("signin", ["provider": "email", "email": "racer@example.com", "code": .string(code == "000000" ? "000001" : "000000")])
        #expect(wrong.errorCode == "OTP_INVALID")

        let processes = try (0..<8).map { _ in try world.start("signin") }
        let event = JSONValue.object(["provider": "email", "email": "racer@example.com", "code": .string(code)]).serializedBytes()
        let outputs = runSimultaneously(8) { processes[$0].finish(stdin: event) }
        outputs.forEach(world.record)
        #expect(outputs.allSatisfy { $0.exitCode == 0 })
        let winners = outputs.filter { $0.errorCode == nil && $0.responseBody?["user"] != nil }
        #expect(winners.count == 1, "\(outputs.map(\.stdoutText))")
        #expect(outputs.filter { $0.errorCode == "OTP_EXPIRED" }.count == 7)
        let users = try world.allItems(at: 0).filter { $0["SK"] == .s("PROFILE") }
        #expect(users.count == 1)

        // No code and no code hash in any log line or response; the outbox holds the only plaintext.
        let logs = world.logs.joined(separator: "\n")
        #expect(!logs.isEmpty)
        #expect(!logs.contains(code) && !logs.contains(codeHash))
        for output in outputs + [started, wrong] {
            #expect(!output.stdoutText.contains(code) && !output.stdoutText.contains(codeHash))
        }
        if backend == .local {
            let files = world.storeSnapshot().keys.filter { !$0.hasSuffix("/") }
            for file in files {
                let text = String(decoding: (try? FileSystem.readFile(world.storeDirectory + file)) ?? [], as: UTF8.self)
                #expect(!text.contains(code), "\(file) holds the code")
            }
            #expect(!files.isEmpty)
        }
        #expect(Outbox.messages(in: codes.outbox).contains { Outbox.code(in: $0) == code })
    }
}
