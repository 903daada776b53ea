import Crypto
import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Contract section 12: `refresh` finds its token by the key the token carries, with one strongly
/// consistent read, so a refresh right after a sign-in or a rotation is never "not found" on
/// DynamoDB, whose GSI1 answers eventually consistent. Proven with GSI1 refused outright: on
/// DynamoDB by a proxy in front of moto, on the local store by a recording table.
@Suite(.serialized) struct RefreshConsistencyTests {
    static let chainLength = 50

    @Test func aFiftyStepRotationChainOnDynamoDBNeverAsksTheIndex() throws {
        let proxy = try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint)
        defer { proxy.stop() }
        proxy.refuseQueries(onIndex: "GSI1")
        let world = try FlowWorld(["AUTH_DYNAMODB_ENDPOINT": proxy.endpoint], backend: .dynamoDB)
        var token = try #require(world.signIn(token: world.googleToken(subject: "chain-user"))["tokens"]?["refreshToken"])
        for step in 1...Self.chainLength {
            let output = world.run("refresh", ["refreshToken": token])
            let next = try #require(output.responseBody?["tokens"]?["refreshToken"], "step \(step): \(output.stdoutText)")
            #expect(next != token)
            token = next
        }
        #expect(proxy.indexQueries == 0)
        // The refusal is real: the one path that still asks the index (a pre-upgrade token) fails.
        let legacy = world.run("refresh", ["refreshToken": .string(Base64.urlEncoded([UInt8](repeating: 5, count: 32)))])
        #expect(legacy.errorCode != nil && legacy.errorCode != "REFRESH_TOKEN_NOT_FOUND", "\(legacy.stdoutText)")
        #expect(proxy.indexQueries == 1)
    }

    @Test func aFiftyStepRotationChainOnTheLocalStoreNeverAsksTheIndex() throws {
        let world = FlowWorld()
        let flows = try InProcessFlows(world, refusingQueriesOn: "GSI1")
        var token = try #require(flows.signIn(idToken: world.googleToken(subject: "chain-user"))["tokens"]?["refreshToken"]?.stringValue)
        for step in 1...Self.chainLength {
            let next = try #require(try flows.refresh(token)["tokens"]?["refreshToken"]?.stringValue, "step \(step)")
            #expect(next != token)
            token = next
        }
        #expect(!flows.table.operations.contains { $0.hasPrefix("Query(") })
        #expect(throws: AuthError.self, "the refusal is real: a pre-upgrade token asks the index") {
            try flows.refresh(Base64.urlEncoded([UInt8](repeating: 5, count: 32)))
        }
        #expect(flows.table.operations.last == "Query(GSI1)")
    }

    /// A keyed token whose secret is wrong names a real item, but is still unknown, and changes
    /// nothing (the secret's hash is compared, in constant time, before anything is written).
    @Test func aKeyedTokenWithAWrongSecretIsUnknown() throws {
        let world = FlowWorld()
        let token = try #require(world.signIn(token: world.googleToken(subject: "forger"))["tokens"]?["refreshToken"]?.stringValue)
        var bytes = try #require(Base64.urlDecoded(token))
        bytes[bytes.count - 17] ^= 0x01  // the secret's last byte, before the 16-byte tag
        let before = world.storeSnapshot()
        let output = world.run("refresh", ["refreshToken": .string(Base64.urlEncoded(bytes))])
        #expect(output.errorCode == "REFRESH_TOKEN_NOT_FOUND", "\(output.stdoutText)")
        #expect(world.storeSnapshot() == before)
    }

    /// A store written before keyed tokens: its refresh token (32 random bytes, found by the hash
    /// in GSI1PK, no secretHash or user copy on the item) refreshes once, into a keyed token of
    /// the same session, which then refreshes without the index.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aTokenIssuedBeforeKeyedTokensMigratesAtItsNextRefresh(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let signedIn = world.signIn(token: world.googleToken(subject: "legacy-user"))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let sessionID = try #require(signedIn["session"]?["id"]?.stringValue)
        let legacyToken = Base64.urlEncoded((0..<32).map { UInt8($0 &* 7 &+ 3) })
        let tokenID = "legacytoken0000000000000001"
        let table = try world.table()
        // The session as the release before refresh families wrote it, then the item exactly as
        // the release before keyed tokens wrote it.
        _ = try EarlierReleaseFamily(rewriting: table, userID: userID, sessionID: sessionID)
        try table.putItem([
            "PK": .s("USER#\(userID)"), "SK": .s("REFRESH#\(tokenID)"),
            "GSI1PK": .s("REFRESH#" + Array(SHA256.hash(data: Array(legacyToken.utf8))).hexString), "GSI1SK": .s("REFRESH"),
            "familyId": .s(sessionID), "userId": .s(userID), "status": .s("ACTIVE"),
            "createdAt": .s(ISO8601.format(epochSeconds: world.now)), "expiresAt": .s(ISO8601.format(epochSeconds: world.now + 3600)),
            "ttl": .n(world.now + 3600 + 86_400),
        ])

        let unknown = world.run("refresh", ["refreshToken": .string(Base64.urlEncoded([UInt8](repeating: 9, count: 32)))])
        #expect(unknown.errorCode == "REFRESH_TOKEN_NOT_FOUND", "\(unknown.stdoutText)")

        let migrated = world.run("refresh", ["refreshToken": .string(legacyToken)])
        let body = try #require(migrated.responseBody, "\(migrated.stdoutText)")
        #expect(body["user"]?["id"]?.stringValue == userID, "\(body)")
        #expect(body["session"]?["id"]?.stringValue == sessionID)
        let keyed = try #require(body["tokens"]?["refreshToken"]?.stringValue)
        let keyedBytes = try #require(Base64.urlDecoded(keyed))
        #expect(keyedBytes.count > 32 && keyedBytes.first == 2, "the new token carries its item's key, family and generation")
        let legacyItem = try table.getItem(TableKey(pk: "USER#\(userID)", sk: "REFRESH#\(tokenID)"))
        #expect(legacyItem?["status"]?.stringValue == "USED")
        #expect(legacyItem?["replacedBy"] != nil)

        let next = world.run("refresh", ["refreshToken": .string(keyed)])
        #expect(next.responseBody?["tokens"]?["refreshToken"] != nil, "\(next.stdoutText)")
    }
}
