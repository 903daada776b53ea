import SwiftASN1

/// The leaf certificate of a `packed` attestation with `x5c` (X.509, RFC 5280), read with
/// swift-asn1's strict DER parser for what W3C WebAuthn Level 3 checks of it: §8.2's key and AAGUID
/// extension, and §8.2.1's requirements (version 3; subject C, O, OU "Authenticator Attestation"
/// and CN; Basic Constraints with CA false). There is no trust evaluation (contract section 15),
/// so nothing else of the certificate (issuer, validity, its own signature) is looked at.
struct AttestationCertificate {
    /// RFC 5280's `version` field plus one: 3 for an X.509 v3 certificate.
    let version: Int
    /// Subject attribute values by attribute type (OID content bytes: `OID.country`, …).
    let subject: [[UInt8]: [String]]
    /// The key's algorithm and, for an EC key, its named curve (OID content bytes).
    let publicKeyAlgorithm: [UInt8]
    let publicKeyCurve: [UInt8]?
    /// The subjectPublicKey BIT STRING's bytes.
    let publicKey: [UInt8]
    /// The SubjectPublicKeyInfo as encoded, for the keys swift-crypto reads from DER.
    let subjectPublicKeyInfo: [UInt8]
    let extensions: [[UInt8]: (critical: Bool, value: [UInt8])]

    /// Object identifiers as their DER contents (compared as bytes: no OID is ever printed).
    enum OID {
        static let country: [UInt8] = [0x55, 0x04, 0x06], organization: [UInt8] = [0x55, 0x04, 0x0A]
        static let organizationalUnit: [UInt8] = [0x55, 0x04, 0x0B], commonName: [UInt8] = [0x55, 0x04, 0x03]
        static let basicConstraints: [UInt8] = [0x55, 0x1D, 0x13]
        /// id-fido-gen-ce-aaguid, 1.3.6.1.4.1.45724.1.1.4 (§8.2.1).
        static let aaguid: [UInt8] = [0x2B, 0x06, 0x01, 0x04, 0x01, 0x82, 0xE5, 0x1C, 0x01, 0x01, 0x04]
        static let ecPublicKey: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
        static let prime256v1: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
        static let ed25519: [UInt8] = [0x2B, 0x65, 0x70]
    }

    /// Why `der` is not a certificate this reads; the message names the part.
    struct Malformed: Error { let reason: String }

    /// swift-asn1 checks the DER (definite, minimal lengths; nothing after the certificate); the
    /// fields are then read as their primitive contents, which keeps this reader small.
    init(der: [UInt8]) throws(Malformed) {
        let root: ASN1Node
        do { root = try DER.parse(der) } catch { throw Malformed(reason: "not DER: \(error)") }
        let tbs = try Self.children(Self.children(root, "certificate").first, "tbsCertificate")
        var fields = tbs[...]
        // version [0] EXPLICIT INTEGER DEFAULT v1
        if let first = fields.first, first.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            let number = try Self.contents(Self.children(first, "version").first, .integer, "version")
            guard number.count == 1 else { throw Malformed(reason: "version is not a small integer") }
            version = Int(number[number.startIndex]) + 1
            fields = fields.dropFirst()
        } else {
            version = 1
        }
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
        guard fields.count >= 6 else { throw Malformed(reason: "tbsCertificate has too few fields") }
        let subjectNode = fields[fields.startIndex + 4], keyInfo = fields[fields.startIndex + 5]
        var subject: [[UInt8]: [String]] = [:]
        for relativeName in try Self.children(subjectNode, "subject") {
            for attribute in try Self.children(relativeName, "subject name") {
                let parts = try Self.children(attribute, "subject attribute")
                guard parts.count == 2 else { throw Malformed(reason: "a subject attribute is not a type and a value") }
                subject[try Self.objectIdentifier(parts[0]), default: []].append(try Self.text(parts[1]))
            }
        }
        self.subject = subject
        let keyParts = try Self.children(keyInfo, "subjectPublicKeyInfo")
        guard keyParts.count == 2 else { throw Malformed(reason: "subjectPublicKeyInfo is not an algorithm and a key") }
        let algorithm = try Self.children(keyParts[0], "the key's algorithm")
        guard let algorithmOID = algorithm.first else { throw Malformed(reason: "the key's algorithm is empty") }
        publicKeyAlgorithm = try Self.objectIdentifier(algorithmOID)
        publicKeyCurve = algorithm.count > 1 ? try? Self.objectIdentifier(algorithm[1]) : nil
        let bits = try Self.contents(keyParts[1], .bitString, "subjectPublicKey")
        guard bits.first == 0 else { throw Malformed(reason: "subjectPublicKey is not whole bytes") }
        publicKey = Array(bits.dropFirst())
        subjectPublicKeyInfo = Array(keyInfo.encodedBytes)
        // issuerUniqueID [1], subjectUniqueID [2], extensions [3] EXPLICIT
        var extensions: [[UInt8]: (critical: Bool, value: [UInt8])] = [:]
        for field in fields.dropFirst(6) where field.identifier == ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific) {
            for item in try Self.children(Self.children(field, "extensions").first, "extensions") {
                let parts = try Self.children(item, "extension")
                guard parts.count == 2 || parts.count == 3 else { throw Malformed(reason: "an extension has \(parts.count) fields") }
                let oid = try Self.objectIdentifier(parts[0])
                let critical = parts.count == 3 ? try Self.boolean(parts[1]) : false
                // RFC 5280 §4.2: one instance of an extension at most.
                guard extensions[oid] == nil else { throw Malformed(reason: "an extension appears twice") }
                extensions[oid] = (critical, Array(try Self.contents(parts[parts.count - 1], .octetString, "an extension's value")))
            }
        }
        self.extensions = extensions
    }

    /// §8.2.1, and §8.2's "if attestnCert contains an id-fido-gen-ce-aaguid extension, its value
    /// is the AAGUID of authenticatorData". Nil when every requirement holds, else the first broken.
    func unmetRequirement(aaguid: [UInt8]) -> String? {
        guard version == 3 else { return "is not X.509 version 3" }
        guard let country = subject[OID.country]?.first, country.utf8.count == 2 else { return "has no two-letter subject C" }
        guard subject[OID.organization]?.first?.isEmpty == false else { return "has no subject O" }
        guard subject[OID.organizationalUnit] == ["Authenticator Attestation"] else { return "has no subject OU \"Authenticator Attestation\"" }
        guard subject[OID.commonName]?.first?.isEmpty == false else { return "has no subject CN" }
        guard let constraints = extensions[OID.basicConstraints] else { return "has no Basic Constraints" }
        // BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }
        guard let fields = try? Self.children(try? DER.parse(constraints.value), "Basic Constraints"),
              fields.first?.identifier != .boolean || (try? Self.boolean(fields[0])) == false else { return "is a CA (Basic Constraints)" }
        if let extensionValue = extensions[OID.aaguid] {
            guard !extensionValue.critical else { return "marks its AAGUID extension critical" }
            guard let inner = try? Self.contents(try? DER.parse(extensionValue.value), .octetString, "AAGUID"), Array(inner) == aaguid else {
                return "has an AAGUID extension that is not authenticatorData's AAGUID"
            }
        }
        return nil
    }

    @inline(never)
    static func children(_ node: ASN1Node?, _ name: String) throws(Malformed) -> [ASN1Node] {
        guard let node, case .constructed(let nodes) = node.content else { throw Malformed(reason: "\(name) is not a constructed value") }
        return Array(nodes)
    }

    @inline(never)
    static func contents(_ node: ASN1Node?, _ tag: ASN1Identifier, _ name: String) throws(Malformed) -> ArraySlice<UInt8> {
        guard let node, node.identifier == tag, case .primitive(let bytes) = node.content else {
            throw Malformed(reason: "\(name) is not of the expected type")
        }
        return bytes
    }

    static func objectIdentifier(_ node: ASN1Node) throws(Malformed) -> [UInt8] {
        Array(try contents(node, .objectIdentifier, "an object identifier"))
    }

    static func boolean(_ node: ASN1Node) throws(Malformed) -> Bool {
        let value = try contents(node, .boolean, "a boolean")
        // DER: FALSE is 0x00 and TRUE 0xFF, one byte.
        guard value.count == 1, value.first == 0 || value.first == 0xFF else { throw Malformed(reason: "a boolean is not DER") }
        return value.first == 0xFF
    }

    /// A DirectoryString as X.509 subjects use it (UTF8String, PrintableString, IA5String).
    static func text(_ node: ASN1Node) throws(Malformed) -> String {
        guard [ASN1Identifier.utf8String, .printableString, .ia5String].contains(node.identifier),
              case .primitive(let bytes) = node.content, let text = String(validating: bytes, as: UTF8.self) else {
            throw Malformed(reason: "a subject value is not a UTF-8, printable or IA5 string")
        }
        return text
    }
}
