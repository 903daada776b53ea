import LambdaAuth
import Testing

@Suite struct GuestConfigurationTests {
    @Test func guestsAreOffWithThirtyAnHourAndThirtyDaysByDefault() throws {
        let configuration = try AuthConfiguration.fromEnvironment([:])
        #expect(!configuration.guestsEnabled)
        #expect(configuration.guestRate == 30)
        #expect(configuration.guestTTL == 2_592_000)
        let on = try AuthConfiguration.fromEnvironment(["AUTH_GUEST": "on", "AUTH_GUEST_RATE": "5", "AUTH_GUEST_TTL": "86400"])
        #expect(on.guestsEnabled && on.guestRate == 5 && on.guestTTL == 86400)
        #expect(try !AuthConfiguration.fromEnvironment(["AUTH_GUEST": "off"]).guestsEnabled)
    }

    @Test(arguments: [("AUTH_GUEST", "yes please"), ("AUTH_GUEST", "true"), ("AUTH_GUEST_RATE", "0"), ("AUTH_GUEST_RATE", "many"),
                      ("AUTH_GUEST_TTL", "60"), ("AUTH_GUEST_TTL", "-1")])
    func invalidValuesNameTheirVariable(_ variable: String, _ value: String) {
        do {
            _ = try AuthConfiguration.fromEnvironment([variable: value])
            Issue.record("\(variable)=\(value) was accepted")
        } catch {
            #expect(error.code == .configError)
            #expect(error.message.hasPrefix(variable + " "))
        }
    }
}
