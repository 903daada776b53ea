import Crypto
@testable import LambdaAuth
import Testing

/// `SHA256.hexDigest(of:)` spells every stored hash: keys and items written before it existed must
/// still be found, so the values below are pinned (computed independently, with Python's hashlib).
struct HexDigestTests {
    @Test func isLowercaseHexOfTheFIPSVector() {
        #expect(SHA256.hexDigest(of: Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(of: []) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func refreshTokenHashesAreAsStored() throws {
        let keyedToken = "AQV1c2VyMQZ0b2tlbjEAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHw"
        guard case .keyed(let userID, let tokenID, let secret) = RefreshTokenCredential.parse(keyedToken) else {
            Issue.record("a keyed token did not parse")
            return
        }
        #expect(userID == "user1" && tokenID == "token1")
        #expect(SHA256.hexDigest(of: secret) == "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd")
        #expect(SHA256.hexDigest(of: Array(keyedToken.utf8)) == "14d7a163949428e2e09923895483a6171804d2c2086efac749f25eabdc6577c6")
        guard case .legacy(let legacyHash, _) = RefreshTokenCredential.parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8") else {
            Issue.record("a legacy token did not parse")
            return
        }
        #expect(legacyHash == "ea866a757e4c38babfa8127cbe9a409d3e1f93a00ff1488ff735fcf917afffd0")
    }

    @Test func hashedKeysAreAsStored() {
        #expect(Keys.appleNotification(id: "apple-notification-jti-1")
            == TableKey(pk: "NOTIFICATION#apple#764e6ff9f11dafb6fa1dd0a0cffc586afef009ecf466427de89fac7cc45b9295", sk: "REPLAY"))
        #expect(Keys.rateCounter(RateLimitScope("test-ip"), key: "a#b")
            == TableKey(pk: "RATE#test-ip#sha256:8187fc8f7f007036dffc199544b33167632c7739733785bbdec0fbb9a2c43ca1", sk: "SLOTS"))
    }
}
