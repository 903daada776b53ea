import LambdaAuth
import Testing

/// AUTH_PASSKEY_*: off without an RP ID, defaults from it, and each invalid value a CONFIG_ERROR
/// naming its variable.
@Suite struct PasskeyConfigurationTests {
    static func settings(_ environment: [String: String]) throws(AuthError) -> PasskeySettings? {
        try AuthConfiguration.fromEnvironment(environment).passkeys
    }

    static func refusal(_ environment: [String: String]) -> String? {
        do { _ = try settings(environment); return nil } catch { return error.code == .configError ? error.message : "\(error)" }
    }

    @Test func offWithoutAnRPIDAndDefaultsFromIt() throws {
        #expect(try Self.settings([:]) == nil)
        #expect(try Self.settings(["AUTH_PASSKEY_RP_ID": "example.com"])
                == PasskeySettings(relyingPartyID: "example.com", relyingPartyName: "example.com", origins: ["https://example.com"],
                                   userVerificationRequired: true))
        let configured = try Self.settings(["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_RP_NAME": "Example",
                                            "AUTH_PASSKEY_ORIGINS": "https://example.com, https://app.example.com:8443,android:apk-key-hash:abc",
                                            "AUTH_PASSKEY_USER_VERIFICATION": "preferred"])
        #expect(configured?.origins == ["https://example.com", "https://app.example.com:8443", "android:apk-key-hash:abc"])
        #expect(configured?.userVerificationRequired == false)
        #expect(configured?.relyingPartyName == "Example")
        #expect(configured?.loginOptionsPerSourceIP == 1000)
        let local = try Self.settings(["AUTH_PASSKEY_RP_ID": "localhost", "AUTH_PASSKEY_ORIGINS": "http://localhost:3000,http://localhost"])
        #expect(local?.origins == ["http://localhost:3000", "http://localhost"])
    }

    @Test func invalidValuesNameTheirVariable() {
        let cases: [([String: String], String)] = [
            (["AUTH_PASSKEY_RP_ID": "https://example.com"], "AUTH_PASSKEY_RP_ID"),
            (["AUTH_PASSKEY_RP_ID": "Example.com"], "AUTH_PASSKEY_RP_ID"),
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "http://example.com"], "AUTH_PASSKEY_ORIGINS"),
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "https://example.com/"], "AUTH_PASSKEY_ORIGINS"),
            // Only localhost itself is the exception to https, not a name that starts with it.
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "http://localhost.evil.example"], "AUTH_PASSKEY_ORIGINS"),
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "http://localhost:3000.evil.example"], "AUTH_PASSKEY_ORIGINS"),
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "http://localhostx:3000"], "AUTH_PASSKEY_ORIGINS"),
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "https://example.com/path"], "AUTH_PASSKEY_ORIGINS"),
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_USER_VERIFICATION": "discouraged"], "AUTH_PASSKEY_USER_VERIFICATION"),
            (["AUTH_PASSKEY_ORIGINS": "https://example.com"], "AUTH_PASSKEY_ORIGINS"),
            (["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_OPTIONS_RATE": "0"], "AUTH_PASSKEY_OPTIONS_RATE"),
        ]
        for (environment, variable) in cases {
            #expect(Self.refusal(environment)?.contains(variable) == true, "\(environment): \(Self.refusal(environment) ?? "accepted")")
        }
    }
}
