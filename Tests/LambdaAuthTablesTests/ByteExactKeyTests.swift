@testable import LambdaAuth
@testable import LambdaAuthTables
import LambdaAuthTestSupport
import Testing

/// Swift's `String ==` is canonical equivalence; DynamoDB compares bytes. The local store keys by
/// bytes too, in memory, in its log and in its file names, so both backends agree before and
/// after a checkpoint (contract section 13).
@Suite(.serialized) struct ByteExactKeyTests {
    static let composed = "jos\u{E9}"          // é as one scalar (NFC)
    static let decomposed = "jose\u{301}"      // e + combining acute (NFD)

    @Test func theTwoSpellingsAreEqualSwiftStringsButNotEqualKeys() {
        #expect(Self.composed == Self.decomposed, "the premise: Swift calls them equal")
        #expect(!Self.composed.sameBytes(as: Self.decomposed))
        #expect(TableKey(pk: Self.composed, sk: "S") != TableKey(pk: Self.decomposed, sk: "S"))
        #expect(Set([TableKey(pk: Self.composed, sk: "S"), TableKey(pk: Self.decomposed, sk: "S")]).count == 2)
        #expect(AttributeValue.s(Self.composed) != .s(Self.decomposed))
        #expect(!AttributeValue.s(Self.composed).dynamoEquals(.s(Self.decomposed)))
        #expect(AttributeValue.s(Self.composed).dynamoOrder(.s(Self.decomposed)) != 0)
    }

    /// Items under both spellings, written, conditioned on, read and queried: what each backend
    /// sees, and for the local store again after its log is checkpointed into partition files.
    static func observe(_ table: any Table) throws -> [String] {
        var seen: [String] = []
        for (name, pk) in [("nfc", composed), ("nfd", decomposed)] {
            seen.append("\(name) get: \(try table.getItem(TableKey(pk: "IDENTITY#google#\(pk)", sk: "LINK"))?["userId"]?.stringValue ?? "-")")
            let page = try table.query(QueryRequest(keyCondition: "PK = :pk",
                                                    attributes: ExpressionAttributes(values: [":pk": .s("USER#\(pk)")])))
            seen.append("\(name) query: \(page.items.compactMap { $0["SK"]?.stringValue }.sorted())")
        }
        return seen
    }

    static func write(_ table: any Table) throws -> [String] {
        var outcomes: [String] = []
        for (name, pk) in [("nfc", composed), ("nfd", decomposed)] {
            var link = TableKey(pk: "IDENTITY#google#\(pk)", sk: "LINK").item
            link["userId"] = .s("user-\(name)")
            do {
                try table.putItem(link, condition: "attribute_not_exists(PK)", attributes: ExpressionAttributes())
                outcomes.append("\(name) put")
            } catch {
                outcomes.append("\(name) refused: \(error)")
            }
            try table.putItem(TableKey(pk: "USER#\(pk)", sk: "SK-\(name)").item)
        }
        // A condition on the other spelling's value fails on bytes.
        do {
            try table.updateItem(TableKey(pk: "IDENTITY#google#\(composed)", sk: "LINK"), update: "SET note = :n",
                                 condition: "userId = :u", attributes: ExpressionAttributes(values: [":n": .s("x"), ":u": .s("user-nfd")]),
                                 returnValues: .none)
            outcomes.append("condition held")
        } catch {
            outcomes.append("condition failed")
        }
        return outcomes
    }

    @Test func theLocalStoreAgreesWithDynamoDBBeforeAndAfterACheckpoint() throws {
        let local = FlowWorld()
        let moto = try FlowWorld(backend: .dynamoDB)
        let clock = FixedClock(Double(local.now))
        let localTable = LocalTable(directory: local.storeDirectory, clock: clock, checkpointThreshold: LocalTable.checkpointThreshold,
                                    dueStores: DueStores())
        let motoTable = try moto.table()
        let written = try Self.write(localTable)
        #expect(written == ["nfc put", "nfd put", "condition failed"])
        #expect(try Self.write(motoTable) == written)
        let expected = ["nfc get: user-nfc", "nfc query: [\"SK-nfc\"]", "nfd get: user-nfd", "nfd query: [\"SK-nfd\"]"]
        #expect(try Self.observe(motoTable) == expected)
        #expect(try Self.observe(localTable) == expected)
        #expect(try LocalTable(directory: local.storeDirectory, clock: clock, checkpointThreshold: 1, dueStores: DueStores()).checkpointIfDue())
        #expect(try Self.observe(localTable) == expected, "after the checkpoint")
        #expect(try Self.observe(LocalTable(directory: local.storeDirectory, clock: clock)) == expected, "from the files, in a fresh table")
        // Two partition files, one per spelling.
        #expect(FileSystem.exists(StoreLayout(root: local.storeDirectory).partitionPath("USER#\(Self.composed)")))
        #expect(FileSystem.exists(StoreLayout(root: local.storeDirectory).partitionPath("USER#\(Self.decomposed)")))
    }

    /// The flows on top: an identity's subject in two normalization forms is two users, on both
    /// backends, and stays two users after the local store's checkpoint.
    @Test(arguments: FlowWorld.Backend.allCases)
    func aSubjectInTwoNormalizationFormsIsTwoUsers(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let flows = try InProcessFlows(world)
        func userID(_ subject: String) throws -> String? {
            try flows.signIn(idToken: world.googleToken(subject: subject, email: nil))["user"]?["id"]?.stringValue
        }
        let composedUser = try userID(Self.composed), decomposedUser = try userID(Self.decomposed)
        #expect(composedUser != nil && decomposedUser != nil && composedUser != decomposedUser)
        if backend == .local {
            #expect(try LocalTable(directory: world.storeDirectory, clock: FixedClock(Double(world.now)), checkpointThreshold: 1,
                                   dueStores: DueStores()).checkpointIfDue())
        }
        #expect(try userID(Self.composed) == composedUser)
        #expect(try userID(Self.decomposed) == decomposedUser)
    }

    /// A 3,000-byte `sub` was 500 INTERNAL on DynamoDB (its 2,048-byte key limit) and accepted
    /// by the local store; both now answer MALFORMED_TOKEN and write nothing.
    @Test(arguments: FlowWorld.Backend.allCases)
    func subjectsAndEmailsOver1024BytesAreMalformedTokens(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let flows = try InProcessFlows(world)
        let tokens = [
            world.googleToken(subject: String(repeating: "s", count: 3000)),
            world.googleToken(subject: String(repeating: "\u{E9}", count: 513)),
            world.googleToken(subject: "long-email", email: String(repeating: "e", count: 1013) + "@example.com"),
        ]
        for token in tokens {
            #expect(throws: AuthError.self) { try flows.signIn(idToken: token) }
            do { _ = try flows.signIn(idToken: token) } catch { #expect(error.code == .malformedToken) }
        }
        #expect(try world.allItems(at: 0).filter { $0["PK"]?.stringValue?.hasPrefix("IDENTITY#") == true }.isEmpty)
        // 1,024 bytes exactly is still a subject.
        #expect(try flows.signIn(idToken: world.googleToken(subject: String(repeating: "s", count: 1024)))["user"] != nil)
    }
}
