import SwiftASN1

/// The leaf certificate of a `packed` attestation with `x5c` (X.509, RFC 5280), read with
/// swift-asn1's strict DER parser for what W3C WebAuthn Level 3 checks of it: §8.2's key and AAGUID
/// extension, and §8.2.1's requirements (version 3; subject C, O, OU "Authenticator Attestation"
/// and CN; Basic Constraints with CA false). There is no trust evaluation (contract section 15),
/// so nothing else of the certificate (issuer, validity, its own signature) is looked at.
struct AttestationCertificate {
    /// RFC 5280's `version` field plus one: 3 for an X.509 v3 certificate.
    let version: Int
    /// Subject attributes by dotted OID (2.5.4.6 C, 2.5.4.10 O, 2.5.4.11 OU, 2.5.4.3 CN).
    let subject: [String: [String]]
    let publicKeyAlgorithm: String
    /// The named curve of an EC key, the algorithm's parameters otherwise absent.
    let publicKeyCurve: String?
    /// The subjectPublicKey BIT STRING's bytes.
    let publicKey: [UInt8]
    /// The SubjectPublicKeyInfo as encoded, for the keys swift-crypto reads from DER.
    let subjectPublicKeyInfo: [UInt8]
    let extensions: [String: (critical: Bool, value: [UInt8])]

    enum OID {
        static let country = "2.5.4.6", organization = "2.5.4.10", organizationalUnit = "2.5.4.11", commonName = "2.5.4.3"
        static let basicConstraints = "2.5.29.19"
        /// id-fido-gen-ce-aaguid (§8.2.1).
        static let aaguid = "1.3.6.1.4.1.45724.1.1.4"
        static let ecPublicKey = "1.2.840.10045.2.1", prime256v1 = "1.2.840.10045.3.1.7"
        static let rsaEncryption = "1.2.840.113549.1.1.1", ed25519 = "1.3.101.112"
    }

    /// Why `der` is not a certificate this reads; the message names the part.
    struct Malformed: Error { let reason: String }

    init(der: [UInt8]) throws(Malformed) {
        do {
            let tbs = try Self.children(Self.children(try DER.parse(der), "certificate").first, "tbsCertificate")
            var fields = tbs[...]
            // version [0] EXPLICIT INTEGER DEFAULT v1
            if let first = fields.first, first.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                guard let inner = try Self.children(first, "version").first else { throw Malformed(reason: "empty version") }
                version = try Int(derEncoded: inner) + 1
                fields = fields.dropFirst()
            } else {
                version = 1
            }
            // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
            guard fields.count >= 6 else { throw Malformed(reason: "tbsCertificate has too few fields") }
            let subjectNode = fields[fields.startIndex + 4], keyInfo = fields[fields.startIndex + 5]
            var subject: [String: [String]] = [:]
            for relativeName in try Self.children(subjectNode, "subject") {
                for attribute in try Self.children(relativeName, "subject name") {
                    let parts = try Self.children(attribute, "subject attribute")
                    guard parts.count == 2 else { throw Malformed(reason: "a subject attribute is not a type and a value") }
                    subject[try ASN1ObjectIdentifier(derEncoded: parts[0]).description, default: []].append(try Self.text(parts[1]))
                }
            }
            self.subject = subject
            let keyParts = try Self.children(keyInfo, "subjectPublicKeyInfo")
            guard keyParts.count == 2 else { throw Malformed(reason: "subjectPublicKeyInfo is not an algorithm and a key") }
            let algorithm = try Self.children(keyParts[0], "the key's algorithm")
            guard let algorithmOID = algorithm.first else { throw Malformed(reason: "the key's algorithm is empty") }
            publicKeyAlgorithm = try ASN1ObjectIdentifier(derEncoded: algorithmOID).description
            publicKeyCurve = algorithm.count > 1 ? (try? ASN1ObjectIdentifier(derEncoded: algorithm[1]))?.description : nil
            publicKey = Array(try ASN1BitString(derEncoded: keyParts[1]).bytes)
            subjectPublicKeyInfo = Array(keyInfo.encodedBytes)
            // issuerUniqueID [1], subjectUniqueID [2], extensions [3] EXPLICIT
            var extensions: [String: (critical: Bool, value: [UInt8])] = [:]
            for field in fields.dropFirst(6) where field.identifier == ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific) {
                guard let list = try Self.children(field, "extensions").first else { throw Malformed(reason: "empty extensions") }
                for item in try Self.children(list, "extensions") {
                    let parts = try Self.children(item, "extension")
                    guard parts.count == 2 || parts.count == 3 else { throw Malformed(reason: "an extension has \(parts.count) fields") }
                    let oid = try ASN1ObjectIdentifier(derEncoded: parts[0]).description
                    let critical = parts.count == 3 ? try Bool(derEncoded: parts[1]) : false
                    // RFC 5280 §4.2: one instance of an extension at most.
                    guard extensions[oid] == nil else { throw Malformed(reason: "extension \(oid) appears twice") }
                    extensions[oid] = (critical, Array(try ASN1OctetString(derEncoded: parts[parts.count - 1]).bytes))
                }
            }
            self.extensions = extensions
        } catch let error as Malformed {
            throw error
        } catch {
            throw Malformed(reason: "not DER: \(error)")
        }
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
        guard let isCA = try? Self.basicConstraintsCA(constraints.value), !isCA else { return "is a CA (Basic Constraints)" }
        if let extensionValue = extensions[OID.aaguid] {
            guard !extensionValue.critical else { return "marks its AAGUID extension critical" }
            guard let inner = try? ASN1OctetString(derEncoded: extensionValue.value), Array(inner.bytes) == aaguid else {
                return "has an AAGUID extension that is not authenticatorData's AAGUID"
            }
        }
        return nil
    }

    /// BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }
    static func basicConstraintsCA(_ value: [UInt8]) throws -> Bool {
        let parts = try children(try DER.parse(value), "Basic Constraints")
        guard let first = parts.first, first.identifier == .boolean else { return false }
        return try Bool(derEncoded: first)
    }

    static func children(_ node: ASN1Node?, _ name: String) throws(Malformed) -> [ASN1Node] {
        guard let node, case .constructed(let nodes) = node.content else { throw Malformed(reason: "\(name) is not a constructed value") }
        return Array(nodes)
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
