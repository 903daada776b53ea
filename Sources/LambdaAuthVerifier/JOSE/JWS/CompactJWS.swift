/// A JWS in compact serialization (RFC 7515 §7.1), parsed strictly and not yet verified.
///
/// Strict on purpose: exactly three parts, each canonical unpadded base64url, the header a JSON
/// object without duplicate member names. A token that could be spelled several ways, or whose
/// header two parsers could read differently, is refused before any key is looked at. The payload
/// is bytes here; `JSONWebToken` reads it as claims.
public struct CompactJWS: Sendable {
    /// Contract: an ID token longer than 16 KiB is refused before any parsing of its content.
    public static let maximumBytes = 16 << 10

    public let header: [String: JSONValue]
    public let payload: [UInt8]
    /// `BASE64URL(header) || '.' || BASE64URL(payload)`, the bytes the signature covers.
    public let signingInput: [UInt8]
    /// May be empty (an unsigned `alg: none` token parses; it is refused by the algorithm check).
    public let signature: [UInt8]

    public var algorithm: String? { header["alg"]?.stringValue }
    public var keyID: String? { header["kid"]?.stringValue }

    public init(parsing token: String) throws(AuthError) {
        try self.init(parsing: token, maximumBytes: CompactJWS.maximumBytes)
    }

    /// `maximumBytes`: a larger ceiling for documents that are JWS but not tokens (the revocation
    /// list grows with the revocations of the last access-token lifetime).
    public init(parsing token: String, maximumBytes: Int) throws(AuthError) {
        guard token.utf8.count <= maximumBytes else {
            throw AuthError(.invalidRequest, "the token is longer than \(maximumBytes >> 10) KiB")
        }
        // One contiguous copy, then byte slices: String.UTF8View's generic iteration would cost
        // more than the rest of the parsing (this runs on every sign-in, in front of one RSA verify).
        let bytes = Array(token.utf8)
        let dot = UInt8(ascii: ".")
        guard let firstDot = bytes.firstIndex(of: dot),
              let secondDot = bytes[(firstDot + 1)...].firstIndex(of: dot),
              !bytes[(secondDot + 1)...].contains(dot)
        else {
            throw CompactJWS.malformed("the token must have three parts separated by dots")
        }
        header = try CompactJWS.parseObject(CompactJWS.decodePart(bytes[..<firstDot], what: "header"), what: "header")
        payload = try CompactJWS.decodePart(bytes[(firstDot + 1)..<secondDot], what: "payload")
        signature = try CompactJWS.decodePart(bytes[(secondDot + 1)...], what: "signature")
        signingInput = Array(bytes[..<secondDot])
    }

    /// `BASE64URL(header) '.' BASE64URL(payload)`: what a signer signs.
    public static func signingInput(header: [String: JSONValue], payload: [UInt8]) -> String {
        Base64.urlEncoded(JSONValue.object(header).serializedBytes()) + "." + Base64.urlEncoded(payload)
    }

    /// The compact serialization of a signed `signingInput`.
    public static func serialize(signingInput: String, signature: [UInt8]) -> String {
        signingInput + "." + Base64.urlEncoded(signature)
    }

    static func decodePart(_ part: ArraySlice<UInt8>, what: String) throws(AuthError) -> [UInt8] {
        guard let decoded = Base64.decode(Array(part), table: Base64.urlTable, padded: false) else {
            throw malformed("the token's \(what) is not canonical base64url")
        }
        return decoded
    }

    /// A JSON object without duplicate member names, as the header and JWT claims must be.
    static func parseObject(_ json: [UInt8], what: String) throws(AuthError) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONValue.parse(json)
        } catch {
            // The member name and offset go to the log only: the message never echoes token content.
            if case .duplicateMember = error.kind {
                throw AuthError(.malformedToken, "the token's \(what) has a duplicate member name", detail: error.description)
            }
            throw AuthError(.malformedToken, "the token's \(what) is not valid JSON", detail: error.description)
        }
        guard case .object(let members) = value else {
            throw malformed("the token's \(what) is not a JSON object")
        }
        return members
    }

    static func malformed(_ message: String) -> AuthError {
        AuthError(.malformedToken, message)
    }
}
