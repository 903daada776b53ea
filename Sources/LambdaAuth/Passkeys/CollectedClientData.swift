/// clientDataJSON (W3C WebAuthn Level 3 §5.8.1), checked against what this ceremony expects:
/// its `type`, its challenge, an origin we serve and no cross-origin embedding.
public struct CollectedClientData: Sendable {
    public let type: String
    /// The challenge bytes (the JSON carries them base64url-encoded, unpadded).
    public let challenge: [UInt8]
    public let origin: String

    public init(_ json: [UInt8]) throws(AuthError) {
        func invalid(_ reason: String) -> AuthError { AuthError(.passkeyInvalid, "clientDataJSON: \(reason)") }
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(json) } catch { throw invalid("not a JSON object (\(error))") }
        guard parsed.objectValue != nil else { throw invalid("not a JSON object") }
        guard let type = parsed["type"]?.stringValue else { throw invalid("type is missing") }
        guard let challengeText = parsed["challenge"]?.stringValue, let challenge = WebAuthnBase64.decode(challengeText) else {
            throw invalid("challenge is missing or not base64url")
        }
        guard let origin = parsed["origin"]?.stringValue else { throw invalid("origin is missing") }
        // A page embedded in another origin's frame: we configure no top origins, so none may.
        if let crossOrigin = parsed["crossOrigin"], crossOrigin != .bool(false) { throw invalid("crossOrigin is not false") }
        if parsed["topOrigin"] != nil { throw invalid("topOrigin is present") }
        self.type = type
        self.challenge = challenge
        self.origin = origin
    }
}

/// The JSON forms' binary fields (WebAuthn Level 3 §5.1.8: base64url). Credential managers differ
/// on padding (Dashlane pads, browsers do not), so both are accepted; nothing else is (standard
/// base64's `+` and `/`, whitespace, stray bits in the last symbol).
public enum WebAuthnBase64 {
    public static func decode(_ text: String) -> [UInt8]? {
        var unpadded = Substring(text)
        if unpadded.utf8.count % 4 == 0 {
            if unpadded.hasSuffix("==") { unpadded = unpadded.dropLast(2) } else if unpadded.hasSuffix("=") { unpadded = unpadded.dropLast() }
        }
        return Base64.urlDecoded(unpadded)
    }
}
