import LambdaAuth
import Testing

/// Project Wycheproof's vectors (a peer's suite, built to catch what JOSE and signature libraries
/// get wrong) run through our own verification: the compact JWS path ID and access tokens take,
/// and the raw RS256, PS256, ES256, ES384 and EdDSA signature checks under it. Every `valid` case
/// must be accepted,
/// every `invalid` one refused, and the `acceptable` RSA case (a DigestInfo without its NULL, a
/// legacy encoding) refused too: a strict verifier has no use for it.
///
/// The files are unmodified copies of ../shared/test-vectors/wycheproof/ in Tests/Vectors/wycheproof/
/// (with their README and licence), so that a clean clone runs them without the shared folder.
/// Each file's case counts are asserted, so that a loader that finds nothing cannot pass.
@Suite struct WycheproofTests {
    static let directory: String = {
        // Tests/LambdaAuthVerifierTests/JOSE/WycheproofTests.swift → Tests/Vectors/wycheproof
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)
        return components.joined(separator: "/") + "/Vectors/wycheproof"
    }()

    /// A vector file's test groups, read with our own JSON parser; `numberOfTests` is the file's
    /// own count, checked against what the groups hold.
    static func groups(_ file: String) throws -> [JSONValue] {
        let document = try JSONValue.parse(FileSystem.readFile(directory + "/" + file, limit: 4 << 20))
        let groups = try #require(document["testGroups"]?.arrayValue, "\(file) has no testGroups")
        let total = groups.reduce(0) { $0 + ($1["tests"]?.arrayValue?.count ?? 0) }
        #expect(document["numberOfTests"]?.int64Value == Int64(total), "\(file): numberOfTests disagrees with its groups")
        return groups
    }

    /// Tallies what ran and checks each verdict against the case's `result`.
    struct Tally: CustomStringConvertible {
        var byResult: [String: Int] = [:]
        var total: Int { byResult.values.reduce(0, +) }

        mutating func check(_ test: JSONValue, accepted: Bool, in file: String) {
            let result = test["result"]?.stringValue ?? "missing"
            byResult[result, default: 0] += 1
            let id = test["tcId"]?.int64Value ?? -1
            let comment = test["comment"]?.stringValue ?? ""
            switch result {
            case "valid": #expect(accepted, "\(file) tcId \(id) (\(comment)): a valid case was refused")
            case "invalid": #expect(!accepted, "\(file) tcId \(id) (\(comment)): an invalid case was accepted")
            case "acceptable": #expect(!accepted, "\(file) tcId \(id) (\(comment)): an acceptable legacy case was accepted")
            default: Issue.record("\(file) tcId \(id): unknown result \(result)")
            }
        }

        var description: String {
            byResult.keys.sorted().map { "\(byResult[$0]!) \($0)" }.joined(separator: ", ")
        }
    }

    // MARK: - Compact JWS

    /// The JWS algorithm a group's key is for: its `alg`, else RS256 or ES256 by its key type
    /// (the groups without `alg` are keys for encryption, which must be refused). nil for a group without a public
    /// key (the HMAC groups: a shared secret, which we never verify with).
    static func jwsAlgorithm(ofGroup group: JSONValue) -> String? {
        guard let key = group["public"] else { return nil }
        if let declared = key["alg"]?.stringValue { return declared }
        switch (key["kty"]?.stringValue, key["crv"]?.stringValue) {
        case ("RSA"?, _): return JWSAlgorithm.rs256.rawValue
        case ("EC"?, "P-256"?): return JWSAlgorithm.es256.rawValue
        default: return nil
        }
    }

    /// The path an ID token takes (IDTokenVerifier), short of the claims: the key set as a JWKS
    /// would publish it, the strict parse, the header's algorithm, the key chosen by `kid`, the
    /// signature. Any refusal on the way is a refusal.
    static func verifiesAsCompactJWS(_ token: String, publishedKey: JSONValue, algorithm: JWSAlgorithm) -> Bool {
        do {
            let keys = try JSONWebKeySet(["keys": [publishedKey]], algorithm: algorithm)
            let jws = try CompactJWS(parsing: token)
            _ = try jws.checkAlgorithm(allowed: [algorithm])
            guard let keyID = jws.keyID, let key = keys.key(id: keyID) else { return false }
            try jws.verifySignature(with: key)
            return true
        } catch {
            return false
        }
    }

    @Test func compactJWSGroupsForEveryAlgorithmWeVerify() throws {
        let file = "json_web_signature_test.json"
        var tallies: [JWSAlgorithm: Tally] = [:]
        // Groups of algorithms we never verify (HMAC, ES512) are left out here, explicitly and
        // counted; their refusal is the algorithm check's, tested elsewhere.
        var skipped: [String: Int] = [:]
        var algorithmMismatches = 0
        for group in try Self.groups(file) {
            let tests = group["tests"]?.arrayValue ?? []
            let name = Self.jwsAlgorithm(ofGroup: group)
            guard let name, let algorithm = JWSAlgorithm(rawValue: name), let key = group["public"] else {
                skipped[name ?? group["private"]?["alg"]?.stringValue ?? "unknown", default: 0] += tests.count
                continue
            }
            for test in tests {
                let token = try #require(test["jws"]?.stringValue)
                let accepted = Self.verifiesAsCompactJWS(token, publishedKey: key, algorithm: algorithm)
                // RFC 7520's Figure 20 signs PS384 with a JWK that declares PS256; Wycheproof calls
                // it valid, contract section 14 ("a JWK's alg, when present, must equal the
                // token's") refuses it. Those cases are counted apart and must be refused.
                let headerAlgorithm = try? CompactJWS(parsing: token).algorithm
                if test["result"]?.stringValue == "valid", let headerAlgorithm, headerAlgorithm != name {
                    #expect(!accepted, "\(file) tcId \(test["tcId"]?.int64Value ?? -1): a token whose alg is not its JWK's was accepted")
                    algorithmMismatches += 1
                    continue
                }
                tallies[algorithm, default: Tally()].check(test, accepted: accepted, in: file)
            }
        }
        let skippedTotal = skipped.values.reduce(0, +)
        print("Wycheproof \(file): " + tallies.keys.map(\.rawValue).sorted().map { "\($0) \(tallies[JWSAlgorithm(rawValue: $0)!]!)" }.joined(separator: "; ")
              + "; \(algorithmMismatches) valid by Wycheproof but refused (alg is not the JWK's); skipped \(skippedTotal) cases of other algorithms (\(skipped.keys.sorted().map { "\($0) \(skipped[$0]!)" }.joined(separator: ", ")))")
        #expect(tallies[.rs256]?.byResult == ["valid": 8, "invalid": 227])
        #expect(tallies[.rs384]?.byResult == ["valid": 4])
        #expect(tallies[.rs512]?.byResult == ["valid": 4])
        #expect(tallies[.ps256]?.byResult == ["valid": 6, "invalid": 42])
        #expect(algorithmMismatches == 2)
        #expect(tallies[.ps384]?.byResult == ["valid": 4, "invalid": 1])
        #expect(tallies[.ps512]?.byResult == ["valid": 4, "invalid": 16])
        #expect(tallies[.es256]?.byResult == ["valid": 2, "invalid": 39])
        #expect(skipped == ["HS256": 40, "ES521": 2])
        #expect(tallies.values.reduce(0) { $0 + $1.total } + algorithmMismatches + skippedTotal == 401)
    }

    // MARK: - Raw signatures

    /// The key a group gives as a JWK, or (for the ECDSA groups that give none) built from the
    /// uncompressed point, read by our JWK parser either way.
    static func key(ofGroup group: JSONValue, member: String, algorithm: JWSAlgorithm) throws -> JSONWebKey {
        if let jwk = group[member] { return try JSONWebKey(jwk, for: algorithm) }
        let point = try #require(group["publicKey"]?["uncompressed"]?.stringValue.flatMap(Self.bytes(hex:)))
        let coordinate = algorithm == .es384 ? 48 : 32
        try #require(point.count == 1 + 2 * coordinate && point[0] == 0x04, "not an uncompressed point of \(algorithm.rawValue)")
        let jwk: JSONValue = ["kty": "EC", "crv": .string(algorithm.curve ?? ""),
                              "x": .string(Base64.urlEncoded(point[1...coordinate])),
                              "y": .string(Base64.urlEncoded(point[(coordinate + 1)...]))]
        return try JSONWebKey(jwk, for: algorithm)
    }

    /// Runs every case of `file` through `JSONWebKey.isValidSignature`, the check under every JWS
    /// we verify (the algorithm's hash of the message, then RSASSA-PKCS1-v1_5, RSASSA-PSS, ECDSA
    /// with r ‖ s, or Ed25519 over the message itself).
    func runRawSignatures(_ file: String, keyMember: String, algorithm: JWSAlgorithm) throws -> Tally {
        var tally = Tally()
        for group in try Self.groups(file) {
            let key = try Self.key(ofGroup: group, member: keyMember, algorithm: algorithm)
            for test in group["tests"]?.arrayValue ?? [] {
                let message = try #require(test["msg"]?.stringValue.flatMap(Self.bytes(hex:)))
                let signature = try #require(test["sig"]?.stringValue.flatMap(Self.bytes(hex:)))
                tally.check(test, accepted: key.isValidSignature(signature, for: message, algorithm: algorithm), in: file)
            }
        }
        print("Wycheproof \(file): \(tally)")
        return tally
    }

    @Test func rsaPKCS1v15With2048BitKeysAndSHA256() throws {
        let tally = try runRawSignatures("rsa_signature_2048_sha256_test.json", keyMember: "keyJwk", algorithm: .rs256)
        #expect(tally.byResult == ["valid": 9, "invalid": 249, "acceptable": 1])
    }

    @Test func ecdsaP256WithSHA256AndP1363Signatures() throws {
        let tally = try runRawSignatures("ecdsa_secp256r1_sha256_p1363_test.json", keyMember: "publicKeyJwk", algorithm: .es256)
        #expect(tally.byResult == ["valid": 173, "invalid": 89])
    }

    @Test func ecdsaP384WithSHA384AndP1363Signatures() throws {
        let tally = try runRawSignatures("ecdsa_secp384r1_sha384_p1363_test.json", keyMember: "publicKeyJwk", algorithm: .es384)
        #expect(tally.byResult == ["valid": 193, "invalid": 87])
    }

    /// PS256 as RFC 7518 §3.5 defines it: MGF1 with SHA-256 and a 32-byte salt, which is what the
    /// file's one group uses; its invalid cases include other salt lengths and hashes.
    @Test func rsaPSSWith2048BitKeysSHA256AndSalt32() throws {
        let tally = try runRawSignatures("rsa_pss_2048_sha256_mgf1_32_test.json", keyMember: "publicKeyJwk", algorithm: .ps256)
        #expect(tally.byResult == ["valid": 63, "invalid": 45])
    }

    /// Each group's key is read twice, as the OKP JWK and from the raw `publicKey.pk`, and the two
    /// must be the same key: the JWK path is the one ID tokens take.
    @Test func ed25519() throws {
        let file = "ed25519_test.json"
        for group in try Self.groups(file) {
            let jwk = try #require(group["publicKeyJwk"])
            let raw = try #require(group["publicKey"]?["pk"]?.stringValue.flatMap(Self.bytes(hex:)))
            #expect(jwk["x"]?.stringValue == Base64.urlEncoded(raw))
        }
        let tally = try runRawSignatures(file, keyMember: "publicKeyJwk", algorithm: .edDSA)
        #expect(tally.byResult == ["valid": 88, "invalid": 63])
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: return digit - 0x30
            case 0x61...0x66: return digit - 0x61 + 10
            case 0x41...0x46: return digit - 0x41 + 10
            default: return nil
            }
        }
        var output: [UInt8] = []
        output.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            output.append(high << 4 | low)
        }
        return output
    }
}
