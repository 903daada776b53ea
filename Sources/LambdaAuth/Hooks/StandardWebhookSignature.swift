import Crypto

/// Standard Webhooks' `v1` signature (https://www.standardwebhooks.com): `v1,` + base64 of
/// HMAC-SHA256 over `id.timestamp.body`, keyed with the bytes after `whsec_` (AUTH_HOOK_SECRET).
/// URL hooks and serve's events webhook sign with it.
public enum StandardWebhookSignature {
    public static func v1(id: String, timestamp: String, body: [UInt8], secret: [UInt8]) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret))
        return "v1," + Base64.encoded(Array(mac))
    }
}
