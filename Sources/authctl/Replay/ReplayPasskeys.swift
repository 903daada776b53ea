import LambdaAuth
import LambdaAuthTooling
import Synchronization

/// The software authenticators of one replay, by name, kept across its steps: a scenario registers
/// a passkey in one step and signs in with it in later ones (`{{passkeyRegistration NAME …}}`,
/// `{{passkeyAssertion NAME …}}`).
final class NamedPasskeyAuthenticators: Sendable {
    private let authenticators = Mutex<[String: SoftPasskeyAuthenticator]>([:])

    /// A new authenticator for `name` (ES256, flags UP, UV, BE, BS) and its RegistrationResponseJSON.
    func register(_ name: String, challenge: [UInt8], handle: [UInt8], rpID: String, origin: String) -> JSONValue {
        let authenticator = SoftPasskeyAuthenticator(rpID: rpID, origin: origin, userHandle: handle)
        authenticators.withLock { $0[name] = authenticator }
        return authenticator.registration(challenge: challenge)
    }

    /// The named authenticator's AuthenticationResponseJSON; its count goes up by one each time.
    func assert(_ name: String, challenge: [UInt8]) throws -> JSONValue {
        try authenticators.withLock { authenticators in
            guard var authenticator = authenticators[name] else {
                throw CommandFailure("{{passkeyAssertion \(name) …}}: no passkey \(name) was registered in this replay")
            }
            let assertion = authenticator.assertion(challenge: challenge)
            authenticators[name] = authenticator
            return assertion
        }
    }
}

extension PlaceholderFiller {
    static let passkeyPlaceholders = ["passkeyRegistration", "passkeyAssertion"]

    /// `{{passkeyRegistration NAME challenge=… handle=… [rpId=example.com] [origin=https://example.com]}}` and
    /// `{{passkeyAssertion NAME challenge=…}}`: a credential as a JSON object (base64url values,
    /// `$saved` names allowed), so the whole string is replaced by it.
    func passkeyCredential(_ words: [String]) throws -> JSONValue {
        guard words.count >= 2 else { throw CommandFailure("{{\(words.joined(separator: " "))}} needs a passkey name") }
        var options = try PlaceholderFiller.options(words.dropFirst(2))
        for (key, value) in options where value.hasPrefix("$") {
            guard let saved = saved[String(value.dropFirst())] else { throw CommandFailure("no saved value \(value) for \(key)") }
            options[key] = saved
        }
        func bytes(_ key: String) throws -> [UInt8] {
            guard let text = options[key], let bytes = Base64.urlDecoded(text) else {
                throw CommandFailure("{{\(words[0]) …}} needs \(key)=BASE64URL (or a $saved value)")
            }
            return bytes
        }
        if words[0] == "passkeyRegistration" {
            return passkeys.register(words[1], challenge: try bytes("challenge"), handle: try bytes("handle"),
                                     rpID: options["rpId"] ?? "example.com", origin: options["origin"] ?? "https://example.com")
        }
        return try passkeys.assert(words[1], challenge: try bytes("challenge"))
    }
}
