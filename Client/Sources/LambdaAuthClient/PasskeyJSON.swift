import Foundation

/// The WebAuthn JSON forms that the server speaks, for platforms whose passkey API gives bytes
/// rather than JSON (iOS and macOS: `ASAuthorizationPlatformPublicKeyCredentialProvider` takes a
/// challenge and a user id as `Data` and answers with raw `Data` fields). Browsers and Android's
/// Credential Manager speak the JSON forms already: pass their JSON through as it is.
public enum PasskeyJSON {
    /// What `ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier:)` and its
    /// `createCredentialRegistrationRequest(challenge:name:userID:)` need, from
    /// `passkeyRegistrationOptions()`.
    public struct CreationOptions: Sendable, Equatable {
        public var relyingPartyID: String
        public var challenge: Data
        public var userID: Data
        public var userName: String
        /// Ids of the user's passkeys, for `excludedCredentials` (the platform refuses to make a second one).
        public var excludedCredentialIDs: [Data]

        public init(_ options: JSON) throws(AuthClientError) {
            let publicKey = options["publicKey"] ?? options
            guard let relyingPartyID = publicKey["rp"]?["id"]?.stringValue,
                  let challenge = publicKey["challenge"]?.stringValue.flatMap(PasskeyJSON.data(base64URL:)),
                  let userID = publicKey["user"]?["id"]?.stringValue.flatMap(PasskeyJSON.data(base64URL:)),
                  let userName = publicKey["user"]?["name"]?.stringValue
            else { throw .invalidResponse("passkey creation options need rp.id, challenge, user.id and user.name") }
            self.relyingPartyID = relyingPartyID
            self.challenge = challenge
            self.userID = userID
            self.userName = userName
            excludedCredentialIDs = PasskeyJSON.credentialIDs(publicKey["excludeCredentials"])
        }
    }

    /// What `createCredentialAssertionRequest(challenge:)` needs, from `passkeySignInOptions()`.
    public struct RequestOptions: Sendable, Equatable {
        public var relyingPartyID: String
        public var challenge: Data

        public init(_ options: JSON) throws(AuthClientError) {
            let publicKey = options["publicKey"] ?? options
            guard let relyingPartyID = publicKey["rpId"]?.stringValue,
                  let challenge = publicKey["challenge"]?.stringValue.flatMap(PasskeyJSON.data(base64URL:))
            else { throw .invalidResponse("passkey request options need rpId and challenge") }
            self.relyingPartyID = relyingPartyID
            self.challenge = challenge
        }
    }

    /// RegistrationResponseJSON from an `ASAuthorizationPlatformPublicKeyCredentialRegistration`
    /// (`credentialID`, `rawClientDataJSON`, `rawAttestationObject`), for `registerPasskey`.
    public static func registration(credentialID: Data, clientDataJSON: Data, attestationObject: Data,
                                    transports: [String] = ["internal", "hybrid"]) -> JSON {
        let id = base64URL(credentialID)
        return ["id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": [:],
                "authenticatorAttachment": "platform",
                "response": ["clientDataJSON": .string(base64URL(clientDataJSON)),
                             "attestationObject": .string(base64URL(attestationObject)),
                             "transports": .array(transports.map(JSON.string))]]
    }

    /// AuthenticationResponseJSON from an `ASAuthorizationPlatformPublicKeyCredentialAssertion`
    /// (`credentialID`, `rawClientDataJSON`, `rawAuthenticatorData`, `signature`, `userID`), for
    /// `signInWithPasskey` and a re-authenticated `deleteAccount`.
    public static func assertion(credentialID: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data,
                                 userHandle: Data?) -> JSON {
        let id = base64URL(credentialID)
        var response: [String: JSON] = ["clientDataJSON": .string(base64URL(clientDataJSON)),
                                        "authenticatorData": .string(base64URL(authenticatorData)),
                                        "signature": .string(base64URL(signature))]
        if let userHandle { response["userHandle"] = .string(base64URL(userHandle)) }
        return ["id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": [:],
                "authenticatorAttachment": "platform", "response": .object(response)]
    }

    /// Unpadded base64url, as WebAuthn's JSON forms write binary fields.
    public static func base64URL(_ data: Data) -> String {
        var text = data.base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Base64url with or without padding; nil for anything else.
    public static func data(base64URL text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard)
    }

    static func credentialIDs(_ descriptors: JSON?) -> [Data] {
        guard case .array(let items)? = descriptors else { return [] }
        return items.compactMap { $0["id"]?.stringValue.flatMap(data(base64URL:)) }
    }
}
