/// Authenticator data (W3C WebAuthn Level 3 §6.1): rpIdHash, flags, signCount, then attested
/// credential data when AT is set and an extensions map when ED is set, and nothing after them.
public struct AuthenticatorData: Sendable {
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let userPresent = Flags(rawValue: 1 << 0)
        public static let userVerified = Flags(rawValue: 1 << 2)
        public static let backupEligible = Flags(rawValue: 1 << 3)
        public static let backedUp = Flags(rawValue: 1 << 4)
        public static let attestedCredentialData = Flags(rawValue: 1 << 6)
        public static let extensionData = Flags(rawValue: 1 << 7)
    }

    public struct AttestedCredential: Sendable {
        public let aaguid: [UInt8]
        public let credentialID: [UInt8]
        /// The COSE_Key bytes as sent: what is stored, and parsed again for each assertion.
        public let publicKeyBytes: [UInt8]
        public let publicKey: COSEPublicKey
    }

    /// The whole structure, as signed.
    public let bytes: [UInt8]
    public let rpIDHash: [UInt8]
    public let flags: Flags
    public let signCount: UInt32
    public let attestedCredential: AttestedCredential?

    /// WebAuthn Level 3 §5.8.3: a credential id is at most 1023 bytes.
    public static let maximumCredentialIDBytes = 1023

    /// The parsed structure; the error says which part is malformed.
    public init(_ bytes: [UInt8]) throws(AuthError) {
        func malformed(_ reason: String) -> AuthError { AuthError(.passkeyInvalid, "authenticatorData: \(reason)") }
        guard bytes.count >= 37 else { throw malformed("shorter than 37 bytes") }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var offset = 37
        let decoder = CBORDecoder()
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= offset + 18 else { throw malformed("attested credential data is truncated") }
            let aaguid = Array(bytes[offset..<offset + 16])
            let idLength = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard idLength > 0, idLength <= Self.maximumCredentialIDBytes else {
                throw malformed("credential id length \(idLength) is not 1 to \(Self.maximumCredentialIDBytes)")
            }
            guard bytes.count >= offset + idLength else { throw malformed("credential id is truncated") }
            let credentialID = Array(bytes[offset..<offset + idLength])
            offset += idLength
            let keyBytes: [UInt8]
            let key: CBORValue
            do {
                let (value, length) = try decoder.decodePrefix(Array(bytes[offset...]))
                key = value
                keyBytes = Array(bytes[offset..<offset + length])
                offset += length
            } catch {
                throw malformed("credential public key is not CBOR (\(error))")
            }
            let publicKey: COSEPublicKey
            do { publicKey = try COSEPublicKey(key) } catch { throw AuthError(.passkeyInvalid, "credential public key: \(error)") }
            attestedCredential = AttestedCredential(aaguid: aaguid, credentialID: credentialID, publicKeyBytes: keyBytes, publicKey: publicKey)
        } else {
            attestedCredential = nil
        }
        if flags.contains(.extensionData) {
            let extensions: (value: CBORValue, length: Int)
            do { extensions = try decoder.decodePrefix(Array(bytes[offset...])) } catch { throw malformed("extensions are not CBOR (\(error))") }
            guard extensions.value.mapEntries != nil else { throw malformed("extensions are not a map") }
            offset += extensions.length
        }
        guard offset == bytes.count else { throw malformed("\(bytes.count - offset) bytes after the last field") }
    }
}
