@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// The two senders: the outbox's files, and SES SendEmail against moto_server (its SES keeps what
/// it accepted, which `/moto-api/data.json` shows).
@Suite(.serialized) struct EmailSenderTests {
    static func verifySESIdentity(_ address: String, on moto: MotoServer) throws {
        let signer = SigV4Signer(credentials: MotoServer.credentials, region: MotoServer.region, service: "ses")
        let form = SigV4.encodeQuery([("Action", "VerifyEmailIdentity"), ("Version", "2010-12-01"), ("EmailAddress", address)])
        let request = HTTPRequest(method: "POST", url: moto.endpoint + "/",
                                  headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")], body: Array(form.utf8),
                                  timeout: 30)
        let response = try CurlHTTPClient().send(try signer.sign(request, now: SystemClock().now()))
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
    }

    /// What moto's SES accepted, as the text of its model data. The dump holds every service's data
    /// of the shared moto (the other suites' tables too), so it is slow under a full test run.
    static func sentMessages(on moto: MotoServer) throws -> String {
        let response = try CurlHTTPClient().send(HTTPRequest(url: moto.endpoint + "/moto-api/data.json", timeout: 30,
                                                             maximumResponseBytes: 64 << 20))
        return String(decoding: response.body, as: UTF8.self)
    }

    /// The body of the message moto's SES accepted for `recipient` (its model data lists each
    /// message as an object with `body` and `destinations`).
    static func sentBody(to recipient: String, in data: JSONValue) -> String? {
        switch data {
        case .object(let members):
            if let body = members["body"]?.stringValue, data.serialized().contains(recipient) { return body }
            for value in members.values { if let found = sentBody(to: recipient, in: value) { return found } }
        case .array(let items):
            for value in items { if let found = sentBody(to: recipient, in: value) { return found } }
        default:
            break
        }
        return nil
    }

    @Test func theOutboxWritesOneMessageAFileThatReadsBack() throws {
        let directory = TestSupport.temporaryDirectory("outbox")
        defer { TestSupport.removeTree(directory) }
        let sender = OutboxEmailSender(directory: directory + "/nested/outbox", from: "auth@example.com", random: SystemRandomSource())
        let message = OneTimeCodeMessage.make(to: try EmailAddress("Reader@Example.com"), code: "042917", ttl: 600)
        try sender.send(message)
        try sender.send(OneTimeCodeMessage.make(to: try EmailAddress("reader@example.com"), code: "512000", ttl: 60))
        let messages = Outbox.messages(in: directory + "/nested/outbox")
        #expect(messages.count == 2)
        #expect(messages.first?.to == "reader@example.com")
        #expect(messages.first?.subject == "Your sign-in code: 042917")
        #expect(messages.first?.body.contains("expires in 10 minutes") == true)
        #expect(messages.last?.body.contains("expires in 1 minute ") == true)
        #expect(Outbox.latestCode(to: "READER@example.com", in: directory + "/nested/outbox") == "512000")
        #expect(try FileSystem.listDirectory(directory + "/nested/outbox").allSatisfy { $0.hasSuffix(".eml") })
    }

    @Test func sesSendsFromAVerifiedIdentityAndRefusalsAreProviderUnavailable() throws {
        let moto = try MotoServer.shared()
        let recipient = "ses-\(SystemRandomSource().identifier(bits: 48).lowercased())@example.com"
        let unverified = SESEmailSender(from: "nobody-verified@example.net", endpoint: moto.endpoint, region: MotoServer.region,
                                        credentials: MotoServer.credentials, http: CurlHTTPClient())
        let message = EmailMessage(to: recipient, subject: "Your sign-in code: 123456", body: "Your sign-in code is 123456\n")
        #expect(throws: AuthError.self) { try unverified.send(message) }
        do { try unverified.send(message) } catch { #expect(error.code == .providerUnavailable && error.retryable) }

        try Self.verifySESIdentity("auth@example.org", on: moto)
        let sender = SESEmailSender(from: "auth@example.org", endpoint: moto.endpoint, region: MotoServer.region,
                                    credentials: MotoServer.credentials, http: CurlHTTPClient())
        try sender.send(message)
        let sent = try JSONValue.parse(try Self.sentMessages(on: moto))
        #expect(Self.sentBody(to: recipient, in: sent) == "Your sign-in code is 123456\n")
    }

    /// otp-start with AUTH_EMAIL_SENDER=ses on moto end to end: the code read from what SES
    /// accepted signs in; an unverified sender is 502 and leaves no code.
    @Test func otpStartThroughSESOnMotoSignsIn() throws {
        let moto = try MotoServer.shared()
        try Self.verifySESIdentity("codes@example.org", on: moto)
        let codes = try EmailCodeWorld(.dynamoDB, ["AUTH_EMAIL_SENDER": "ses", "AUTH_EMAIL_FROM": "codes@example.org",
                                                   "AUTH_SES_ENDPOINT": moto.endpoint])
        let recipient = "via-ses-\(SystemRandomSource().identifier(bits: 48).lowercased())@example.com"
        #expect(try codes.start(recipient).get().status == 202)
        let body = try #require(Self.sentBody(to: recipient, in: try JSONValue.parse(try Self.sentMessages(on: moto))))
        let code = try #require(Outbox.code(in: EmailMessage(to: recipient, subject: "", body: body)))
        #expect(try codes.signIn(recipient, code: code).get()["user"]?["email"]?.stringValue == recipient)

        codes.world.setEnvironment("AUTH_EMAIL_FROM", "unverified@example.net")
        guard case .failure(let error) = try codes.reopened().start("second-" + recipient) else {
            Issue.record("an unverified SES sender was accepted")
            return
        }
        #expect(error.code == .providerUnavailable)
        #expect(try codes.world.allItems(at: 0).allSatisfy { $0["PK"] != .s("OTP#second-" + recipient) })
    }
}
