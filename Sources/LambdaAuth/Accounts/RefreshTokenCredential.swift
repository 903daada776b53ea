import Crypto

/// A refresh token as the client holds it. It carries the key of its item beside 256 secret bits,
/// so that `refresh` finds the item with one strongly consistent GetItem on the base table instead
/// of a look-up through GSI1, which DynamoDB serves eventually consistent (a token used right
/// after it was issued could be "unknown" there).
///
/// Wire form (format 2, every token issued now): base64url (unpadded) of
/// `02 | len | userId | len | familyId | generation (u32, big-endian) | secret(32) | tag(16)`.
/// The item is `USER#<userId>` / `REFRESH#<familyId>.<generation>`. The family and generation
/// let `refresh` recognise a token of the family long after its item is gone (reuse detection
/// for the family's whole life, with two token items per family at most); the tag, an HMAC under
/// the family's own key kept on its session item, proves the token was issued, so that knowing a
/// user id and a session id (an access token shows both) is not enough to forge an old token and
/// get the family revoked.
///
/// Format 1 (`01 | len | userId | len | tokenId | secret(32)`) and the 43-character tokens of
/// 32 random bytes before it are still read: families written by earlier releases move to
/// format 2 at their next refresh.
struct RefreshTokenCredential: Sendable {
    static let familyFormat: UInt8 = 2
    static let keyedFormat: UInt8 = 1
    static let secretLength = 32
    static let tagLength = 16

    let userID: String
    let familyID: String
    let generation: Int64
    let secret: [UInt8]
    /// What the client receives.
    let token: String

    /// The first token of a new family.
    init(userID: String, family: RefreshFamilyKey, random: any RandomSource) {
        self.init(userID: userID, family: family, generation: 1, secret: random.bytes(RefreshTokenCredential.secretLength))
    }

    /// The token of `generation` that replaces the one whose secret is `predecessorSecret` (for
    /// generation 1, a token of a family an earlier release wrote). Its secret is derived from the
    /// predecessor's and a fresh random `nonce` kept on the predecessor's item for the grace
    /// period: whoever presents the predecessor again within it gets this very token back, while
    /// the store never holds it (only the SHA-256 of each secret, and a nonce that is useless
    /// without the predecessor).
    init(succeeding predecessorSecret: [UInt8], generation: Int64, userID: String, family: RefreshFamilyKey, nonce: [UInt8]) {
        let secret = Array(HMAC<SHA256>.authenticationCode(for: Array("lambda-auth/refresh-token/successor/v1".utf8) + nonce,
                                                           using: SymmetricKey(data: predecessorSecret)))
        self.init(userID: userID, family: family, generation: generation, secret: secret)
    }

    init(userID: String, family: RefreshFamilyKey, generation: Int64, secret: [UInt8]) {
        self.userID = userID
        self.familyID = family.familyID
        self.generation = generation
        self.secret = secret
        let body = RefreshTokenCredential.body(userID: userID, familyID: family.familyID, generation: generation, secret: secret)
        token = Base64.urlEncoded(body + family.tag(body))
    }

    static func body(userID: String, familyID: String, generation: Int64, secret: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [familyFormat]
        for part in [userID, familyID] {
            bytes.append(UInt8(part.utf8.count))
            bytes += part.utf8
        }
        let counter = UInt32(truncatingIfNeeded: generation)
        bytes += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        return bytes + secret
    }

    /// The item's sort-key suffix: the family and the generation, so a token's item, its
    /// predecessor's and its successor's keys follow from the token alone.
    var tokenID: String { Keys.familyTokenID(familyID, generation: generation) }

    /// SHA-256 (hex) of the secret part: what the item keeps as `secretHash`.
    var secretHash: String { SHA256.hexDigest(of: secret) }
    /// SHA-256 (hex) of the whole token: the item's `GSI1PK` suffix.
    var tokenHash: String { SHA256.hexDigest(of: Array(token.utf8)) }

    /// A format-2 token as presented: its parts, its tag not checked yet (that needs the family's key).
    struct Presented: Sendable {
        let userID: String
        let familyID: String
        let generation: Int64
        let secret: [UInt8]
        let body: [UInt8]
        let tag: [UInt8]

        var tokenID: String { Keys.familyTokenID(familyID, generation: generation) }
        var secretHash: String { SHA256.hexDigest(of: secret) }

        /// The credential, once the family's key proves the tag: nil for a forgery.
        func authenticated(by family: RefreshFamilyKey) -> RefreshTokenCredential? {
            guard family.familyID == familyID, constantTimeEqual(family.tag(body), tag) else { return nil }
            return RefreshTokenCredential(userID: userID, family: family, generation: generation, secret: secret)
        }
    }

    enum Parsed {
        /// The current format: family, generation, secret and tag.
        case family(Presented)
        /// Format 1: the key of its item and its secret (a family written by an earlier release).
        case keyed(userID: String, tokenID: String, secret: [UInt8])
        /// A token of the first format (32 random bytes): found through GSI1 by its hash.
        case legacy(tokenHash: String, secret: [UInt8])
        /// Cannot be one of ours.
        case unknown
    }

    static func parse(_ text: String) -> Parsed {
        guard let bytes = Base64.urlDecoded(text), Base64.urlEncoded(bytes) == text else { return .unknown }
        if bytes.count == secretLength { return .legacy(tokenHash: SHA256.hexDigest(of: Array(text.utf8)), secret: bytes) }
        var position = 1
        func part() -> String? {
            guard position < bytes.count else { return nil }
            let length = Int(bytes[position])
            let start = position + 1, end = start + length
            guard length > 0, end <= bytes.count else { return nil }
            position = end
            let value = bytes[start..<end]
            // Only what newIdentifier and our user ids produce: nothing that could bend a key.
            guard value.allSatisfy({ $0.isASCIIAlphanumeric(or: "-_.") }) else { return nil }
            return String(decoding: value, as: UTF8.self)
        }
        switch bytes.first {
        case keyedFormat:
            guard let userID = part(), let tokenID = part(), bytes.count - position == secretLength else { return .unknown }
            return .keyed(userID: userID, tokenID: tokenID, secret: Array(bytes[position...]))
        case familyFormat:
            guard let userID = part(), let familyID = part(), bytes.count - position == 4 + secretLength + tagLength else { return .unknown }
            let generation = bytes[position..<position + 4].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let secretStart = position + 4, tagStart = secretStart + secretLength
            guard generation > 0 else { return .unknown }
            return .family(Presented(userID: userID, familyID: familyID, generation: generation,
                                     secret: Array(bytes[secretStart..<tagStart]), body: Array(bytes[..<tagStart]),
                                     tag: Array(bytes[tagStart...])))
        default:
            return .unknown
        }
    }
}

/// A refresh-token family's own key, kept on its session item (`familyKey`). It only tags the
/// family's tokens, so that an old token can be told from a forgery after its item is gone; it
/// opens nothing, and refreshing still needs the live token's secret, whose hash alone is stored.
struct RefreshFamilyKey: Sendable {
    let familyID: String
    let key: [UInt8]

    static func generate(familyID: String, random: any RandomSource) -> RefreshFamilyKey {
        RefreshFamilyKey(familyID: familyID, key: random.bytes(32))
    }

    func tag(_ body: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: key)).prefix(RefreshTokenCredential.tagLength))
    }

    var stored: AttributeValue { .s(Base64.urlEncoded(key)) }

    init(familyID: String, key: [UInt8]) {
        self.familyID = familyID
        self.key = key
    }

    init?(familyID: String, stored: AttributeValue?) {
        guard let text = stored?.stringValue, let key = Base64.urlDecoded(text), key.count == 32 else { return nil }
        self.init(familyID: familyID, key: key)
    }
}
