import Crypto

/// A refresh token as the client holds it. It carries the key of its item (user id and token id)
/// beside 256 secret bits, so that `refresh` finds the item with one strongly consistent GetItem
/// on the base table instead of a look-up through GSI1, which DynamoDB serves eventually
/// consistent (a token used right after it was issued could be "unknown" there).
///
/// Wire form: base64url (unpadded) of `01 | len | userId | len | tokenId | secret(32)`: opaque
/// and base64url as the contract asks. Stored: `secretHash`, the SHA-256 of the secret part,
/// compared in constant time, and `GSI1PK` = `REFRESH#<SHA-256 of the whole token>` for operators.
///
/// Tokens issued before keyed tokens existed are 43 characters of base64url (32 random bytes);
/// they are still found once through GSI1 and replaced by a keyed token at that refresh.
struct RefreshTokenCredential: Sendable {
    static let formatVersion: UInt8 = 1
    static let secretLength = 32

    let userID: String
    let tokenID: String
    let secret: [UInt8]
    /// What the client receives.
    let token: String

    /// A new token for an item of `userID` with a fresh id and secret.
    init(userID: String, random: any RandomSource) {
        self.init(userID: userID, tokenID: newIdentifier(random), secret: random.bytes(RefreshTokenCredential.secretLength))
    }

    private init(userID: String, tokenID: String, secret: [UInt8]) {
        self.userID = userID
        self.tokenID = tokenID
        self.secret = secret
        var bytes: [UInt8] = [RefreshTokenCredential.formatVersion]
        for part in [userID, tokenID] {
            bytes.append(UInt8(part.utf8.count))
            bytes += part.utf8
        }
        token = Base64.urlEncoded(bytes + secret)
    }

    /// SHA-256 (hex) of the secret part: what the item keeps as `secretHash`.
    var secretHash: String { SHA256.hexDigest(of: secret) }
    /// SHA-256 (hex) of the whole token: the item's `GSI1PK` suffix.
    var tokenHash: String { SHA256.hexDigest(of: Array(token.utf8)) }

    enum Presented {
        /// A keyed token: read its item directly.
        case keyed(RefreshTokenCredential)
        /// A token of the earlier format (32 random bytes): found through GSI1 by its hash.
        case legacy(tokenHash: String)
        /// Cannot be one of ours.
        case unknown
    }

    static func parse(_ text: String) -> Presented {
        guard let bytes = Base64.urlDecoded(text), Base64.urlEncoded(bytes) == text else { return .unknown }
        if bytes.count == secretLength { return .legacy(tokenHash: SHA256.hexDigest(of: Array(text.utf8))) }
        guard bytes.first == formatVersion else { return .unknown }
        var position = 1
        func part() -> String? {
            guard position < bytes.count else { return nil }
            let length = Int(bytes[position])
            let start = position + 1, end = start + length
            guard length > 0, end <= bytes.count else { return nil }
            position = end
            let value = bytes[start..<end]
            // Only what newIdentifier and our user ids produce: nothing that could bend a key.
            guard value.allSatisfy({ $0.isASCIIIdentifierByte }) else { return nil }
            return String(decoding: value, as: UTF8.self)
        }
        guard let userID = part(), let tokenID = part(), bytes.count - position == secretLength else { return .unknown }
        let credential = RefreshTokenCredential(userID: userID, tokenID: tokenID, secret: Array(bytes[position...]))
        return credential.token == text ? .keyed(credential) : .unknown
    }
}

extension UInt8 {
    fileprivate var isASCIIIdentifierByte: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
            || self == UInt8(ascii: "-") || self == UInt8(ascii: "_") || self == UInt8(ascii: ".")
    }
}
