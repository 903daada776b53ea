import LambdaAuth
import Testing

@Suite struct EmailConfigurationTests {
    static let key = Base64.encoded([UInt8](repeating: 1, count: 32))

    @Test func defaultsAndValues() throws {
        let configuration = try AuthConfiguration.fromEnvironment([:])
        #expect(!configuration.emailEnabled && configuration.otpTTL == 600 && configuration.otpRate == 5 && configuration.otpKey == nil)
        #expect(configuration.emailSender == .outbox(directory: ".auth-dev/outbox"))
        let on = try AuthConfiguration.fromEnvironment([
            "AUTH_EMAIL": "on", "AUTH_OTP_TTL": "300", "AUTH_OTP_RATE": "3", "AUTH_OTP_KEY": Self.key,
            "AUTH_EMAIL_SENDER": "ses", "AUTH_EMAIL_FROM": "auth@example.com", "AUTH_SES_ENDPOINT": "http://127.0.0.1:5000",
        ])
        #expect(on.emailEnabled && on.otpTTL == 300 && on.otpRate == 3 && on.otpKey == [UInt8](repeating: 1, count: 32))
        #expect(on.emailSender == .ses && on.emailFrom == "auth@example.com" && on.sesEndpoint == "http://127.0.0.1:5000")
        #expect(try AuthConfiguration.fromEnvironment(["AUTH_EMAIL_SENDER": "outbox:/tmp/mail"]).emailSender == .outbox(directory: "/tmp/mail"))
    }

    @Test(arguments: [
        ["AUTH_EMAIL": "maybe"], ["AUTH_OTP_TTL": "10"], ["AUTH_OTP_RATE": "0"], ["AUTH_OTP_KEY": "c2hvcnQ="],
        ["AUTH_EMAIL_SENDER": "smtp"], ["AUTH_EMAIL_SENDER": "outbox:"], ["AUTH_EMAIL_FROM": "nobody"],
        ["AUTH_SES_ENDPOINT": "http://email.example.com"],
        // What an enabled deployment cannot do without.
        ["AUTH_EMAIL": "on", "AUTH_EMAIL_SENDER": "ses"],
        ["AUTH_EMAIL": "on", "AUTH_STORE": "dynamodb:users-table", "AUTH_SIGNING_KEY": "pem", "AUTH_CREDENTIALS_SECRET": "0123456789abcdef"],
    ])
    func invalidValuesAreConfigErrorsNamingTheVariable(_ environment: [String: String]) {
        do {
            _ = try AuthConfiguration.fromEnvironment(environment)
            Issue.record("\(environment) was accepted")
        } catch {
            #expect(error.code == .configError)
            #expect(error.message.hasPrefix("AUTH_"), "\(error.message)")
        }
    }
}
