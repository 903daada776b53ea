import LambdaAuth
import Testing

/// Project Wycheproof's vectors (a peer's suite, built to catch what JOSE and signature libraries
/// get wrong) run through our own verification: the compact JWS path ID and access tokens take,
/// and the raw RS256 and ES256 signature checks under it. Every `valid` case must be accepted,
/// every `invalid` one refused, and the `acceptable` RSA case (a DigestInfo without its NULL, a
/// legacy encoding) refused too: a strict verifier has no use for it.
///
/// The files are unmodified copies of ../shared/test-vectors/wycheproof/ in Tests/Vectors/wycheproof/
/// (with their README and licence), so that a clean clone runs them without the shared folder.
/// Each file's case counts are asserted, so that a loader that finds nothing cannot pass.
@Suite struct WycheproofTests {
    static let directory: String = {
        // Tests/LambdaAuthTests/JOSE/WycheproofTests.swift → Tests/Vectors/wycheproof
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

    /// The JWS algorithm a group's key is for: its `alg`, else the one algorithm we verify with
    /// its key type (as a key without `alg` is read from a JWKS). nil for a group without a public
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

    @Test func compactJWSGroupsForRS256AndES256() throws {
        let file = "json_web_signature_test.json"
        var tallies: [JWSAlgorithm: Tally] = [:]
        // Groups of algorithms we never verify (HMAC, PSS, RS384/512, ES512) are left out here,
        // explicitly and counted; their refusal is the algorithm check's, tested elsewhere.
        var skipped: [String: Int] = [:]
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
                tallies[algorithm, default: Tally()].check(test, accepted: accepted, in: file)
            }
        }
        let skippedTotal = skipped.values.reduce(0, +)
        print("Wycheproof \(file): RS256 \(tallies[.rs256]?.description ?? "none"); ES256 \(tallies[.es256]?.description ?? "none"); "
              + "skipped \(skippedTotal) cases of other algorithms (\(skipped.keys.sorted().map { "\($0) \(skipped[$0]!)" }.joined(separator: ", ")))")
        #expect(tallies[.rs256]?.byResult == ["valid": 8, "invalid": 227])
        #expect(tallies[.es256]?.byResult == ["valid": 2, "invalid": 39])
        #expect(skipped == ["HS256": 40, "PS256": 50, "PS384": 5, "PS512": 20, "RS384": 4, "RS512": 4, "ES521": 2])
        #expect((tallies[.rs256]?.total ?? 0) + (tallies[.es256]?.total ?? 0) + skippedTotal == 401)
    }

    // MARK: - Raw signatures

    /// The key a group gives as a JWK, or (for the P-256 groups that give none) built from the
    /// uncompressed point, read by our JWK parser either way.
    static func key(ofGroup group: JSONValue, member: String, algorithm: JWSAlgorithm) throws -> JSONWebKey {
        if let jwk = group[member] { return try JSONWebKey(jwk, for: algorithm) }
        let point = try #require(group["publicKey"]?["uncompressed"]?.stringValue.flatMap(Self.bytes(hex:)))
        try #require(point.count == 65 && point[0] == 0x04, "not an uncompressed P-256 point")
        let jwk: JSONValue = ["kty": "EC", "crv": "P-256",
                              "x": .string(Base64.urlEncoded(point[1..<33])), "y": .string(Base64.urlEncoded(point[33..<65]))]
        return try JSONWebKey(jwk, for: algorithm)
    }

    /// Runs every case of `file` through `JSONWebKey.isValidSignature`, the check under every JWS
    /// we verify (SHA-256 of the message, then RSASSA-PKCS1-v1_5 or ECDSA with r ‖ s).
    func runRawSignatures(_ file: String, keyMember: String, algorithm: JWSAlgorithm) throws -> Tally {
        var tally = Tally()
        for group in try Self.groups(file) {
            let key = try Self.key(ofGroup: group, member: keyMember, algorithm: algorithm)
            for test in group["tests"]?.arrayValue ?? [] {
                let message = try #require(test["msg"]?.stringValue.flatMap(Self.bytes(hex:)))
                let signature = try #require(test["sig"]?.stringValue.flatMap(Self.bytes(hex:)))
                tally.check(test, accepted: key.isValidSignature(signature, for: message), in: file)
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
