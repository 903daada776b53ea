import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The sample exports of Events/import, one per system, each with the same awkward cases: a user
/// with two providers (Ada), an unverified email (Grace), a Google identity already here (Linus),
/// two users with one email, a malformed record, a password-only user (Pat).
struct ImportSample: Sendable {
    let system: ImportSystem
    let file: String
    let ada: (id: String, google: String, apple: String, email: String)
    let grace: (id: String, google: String, email: String)
    let linus: (id: String, google: String)
    let sharedFirst: (id: String, apple: String, email: String)
    let sharedSecond: (id: String, google: String)
    let malformedRecord: String
    let pat: (id: String, email: String)

    var path: String { TestSupport.packageRoot + "/Events/import/" + file }

    func userID(_ oldID: String) -> String { ImportedAccount.userID(system: system.rawValue, sourceID: oldID) }

    static func of(_ system: ImportSystem) -> ImportSample {
        switch system {
        case .firebase:
            return ImportSample(
                system: system, file: "firebase-auth-export.json",
                ada: ("Fb0AdaLovelace0000000000001", "100000000000000000001", "000001.f1rebase0ada.0101", "ada@firebase.example"),
                grace: ("Fb0GraceHopper0000000000002", "100000000000000000002", "grace@firebase.example"),
                linus: ("Fb0LinusAlreadyHere00000003", "100000000000000000003"),
                sharedFirst: ("Fb0SharedEmailFirst00000004", "000001.f1rebase0shared.0104", "shared@firebase.example"),
                sharedSecond: ("Fb0SharedEmailSecond0000005", "100000000000000000005"),
                malformedRecord: "user 6", pat: ("Fb0PatPasswordOnly000000007", "pat@firebase.example"))
        case .auth0:
            return ImportSample(
                system: system, file: "auth0-users.ndjson",
                ada: ("google-oauth2|200000000000000000001", "200000000000000000001", "000002.a0ada.0201", "ada@auth0.example"),
                grace: ("google-oauth2|200000000000000000002", "200000000000000000002", "grace@auth0.example"),
                linus: ("google-oauth2|200000000000000000003", "200000000000000000003"),
                sharedFirst: ("apple|000002.a0shared.0204", "000002.a0shared.0204", "shared@auth0.example"),
                sharedSecond: ("google-oauth2|200000000000000000005", "200000000000000000005"),
                malformedRecord: "line 6", pat: ("auth0|5f1e0000000000000000a007", "pat@auth0.example"))
        case .cognito:
            return ImportSample(
                system: system, file: "cognito-list-users.json",
                ada: ("c0a1ada0-0000-4000-8000-000000000001", "300000000000000000001", "000003.c0ada.0301", "ada@cognito.example"),
                grace: ("c0a1ada0-0000-4000-8000-000000000002", "300000000000000000002", "grace@cognito.example"),
                linus: ("c0a1ada0-0000-4000-8000-000000000003", "300000000000000000003"),
                sharedFirst: ("c0a1ada0-0000-4000-8000-000000000004", "000003.c0shared.0304", "shared@cognito.example"),
                sharedSecond: ("c0a1ada0-0000-4000-8000-000000000005", "300000000000000000005"),
                malformedRecord: "user 6", pat: ("c0a1ada0-0000-4000-8000-000000000007", "pat@cognito.example"))
        }
    }
}

/// Serialized: the DynamoDB cases run against the one shared (serial) moto server, where an
/// import's transactions copy the whole table; three at once starved every other suite's requests
/// past the client's 3 s timeout.
@Suite(.serialized) struct UserImportTests {
    static let cases: [(ImportSystem, FlowWorld.Backend)] = ImportSystem.allCases.flatMap { system in
        FlowWorld.Backend.allCases.map { (system, $0) }
    }

    static func authctl(_ world: FlowWorld, _ arguments: String...) throws -> ProcessRunner.Output {
        try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: world.environment)
    }

    /// `authctl store export` of the whole table, as bytes.
    static func export(_ world: FlowWorld) throws -> [UInt8] {
        let output = try authctl(world, "store", "export")
        #expect(output.exitCode == 0, "\(output.stderrText)")
        return output.stdout
    }

    /// Each format's reader finds each case as the system records it.
    @Test(arguments: ImportSystem.allCases)
    func readersFindEveryCaseOfTheSamples(_ system: ImportSystem) throws {
        let sample = ImportSample.of(system)
        let users = try system.read(FileSystem.readFile(sample.path))
        #expect(users.count == 7)
        let ada = try #require(users.first { $0.id == sample.ada.id })
        #expect(ada.emailVerified && ada.email == sample.ada.email && ada.displayName == "Ada Lovelace")
        #expect(Set(ada.identities.map(\.subject)).isSuperset(of: [sample.ada.google, sample.ada.apple]))
        #expect(ada.createdAt == 1_577_836_800, "2020-01-01T00:00:00Z in each system's own spelling")
        let grace = try #require(users.first { $0.id == sample.grace.id })
        #expect(!grace.emailVerified && grace.email == sample.grace.email)
        let malformed = try #require(users.first { $0.position == sample.malformedRecord })
        #expect(malformed.invalid != nil, "\(malformed)")
    }

    /// The whole story on each backend: the import keeps each user's Google and Apple
    /// subjects, so a sign-in with either lands on the imported user (never a new one), skips
    /// the conflicts with their reasons, and a second run writes nothing.
    @Test(arguments: cases)
    func importedUsersSignInAsThemselvesAndASecondRunWritesNothing(_ system: ImportSystem, _ backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let sample = ImportSample.of(system)
        let here = world.signIn(token: world.googleToken(subject: sample.linus.google, email: "linus@elsewhere.example"))
        let linusHere = try #require(here["user"]?["id"]?.stringValue)

        let first = try Self.authctl(world, "users", "import", "--from", system.rawValue, sample.path)
        #expect(first.exitCode == 0, "\(first.stderrText)")
        let summary = try #require(first.json, "\(first.stdoutText)")
        #expect(summary["imported"] == .number(4) && summary["alreadyPresent"] == .number(0), "\(summary)")
        let skipped = summary["skipped"]?.arrayValue ?? []
        #expect(skipped.count == 3, "\(summary)")
        func reason(_ record: (JSONValue) -> Bool) -> String { skipped.first(where: record)?["reason"]?.stringValue ?? "" }
        #expect(reason { $0["id"]?.stringValue == sample.linus.id } == "identity google \(sample.linus.google) belongs to user \(linusHere)")
        #expect(reason { $0["id"]?.stringValue == sample.sharedSecond.id }
                == "email \(sample.sharedFirst.email) is claimed by user \(sample.userID(sample.sharedFirst.id))")
        let malformed = reason { $0["record"]?.stringValue == sample.malformedRecord }
        #expect(malformed.hasPrefix("invalid record: "), "\(skipped)")
        #expect(!first.stderrText.contains("\u{1B}["), "no progress line when stderr is not a terminal")

        // Grace's address was not verified: kept, unclaimed.
        let table = try world.table()
        let grace = try #require(try table.getItem(Keys.profileKey(sample.userID(sample.grace.id))))
        #expect(grace["emailVerified"] == .bool(false) && grace["email"] == .s(sample.grace.email))
        #expect(try table.getItem(Keys.email(sample.grace.email)) == nil)

        let before = try Self.export(world)
        let second = try Self.authctl(world, "users", "import", "--from", system.rawValue, sample.path)
        #expect(second.exitCode == 0, "\(second.stderrText)")
        #expect(second.json?["imported"] == .number(0) && second.json?["alreadyPresent"] == .number(4), "\(second.stdoutText)")
        #expect(second.json?["skipped"] == summary["skipped"])
        #expect(second.json?["itemsWritten"] == .number(0))
        #expect(try Self.export(world) == before, "the second run changed the table")

        let adaID = sample.userID(sample.ada.id)
        for (provider, token) in [(ProviderName.google, world.googleToken(subject: sample.ada.google, email: sample.ada.email)),
                                  (.apple, world.appleToken(subject: sample.ada.apple, email: sample.ada.email)),
                                  (.google, world.googleToken(subject: sample.ada.google, email: sample.ada.email))] {
            let body = world.signIn(provider, token: token)
            #expect(body["user"]?["id"]?.stringValue == adaID && body["isNewUser"] == .bool(false), "\(body)")
            #expect(body["user"]?["appMetadata"]?["importedFrom"] == ["system": .string(system.rawValue), "id": .string(sample.ada.id)])
            #expect(body["user"]?["createdAt"] == "2020-01-01T00:00:00Z")
            #expect(body["user"]?["identities"]?.arrayValue?.count == 2)
        }
        let graceBody = world.signIn(token: world.googleToken(subject: sample.grace.google, email: sample.grace.email))
        #expect(graceBody["user"]?["id"]?.stringValue == sample.userID(sample.grace.id) && graceBody["isNewUser"] == .bool(false))
        let sharedBody = world.signIn(.apple, token: world.appleToken(subject: sample.sharedFirst.apple, email: sample.sharedFirst.email))
        #expect(sharedBody["user"]?["id"]?.stringValue == sample.userID(sample.sharedFirst.id) && sharedBody["isNewUser"] == .bool(false))
        // Pat had a password only: the verified address is an email identity now.
        #expect(try table.getItem(Keys.identityLink(.email, sample.pat.email))?["userId"] == .s(sample.userID(sample.pat.id)))

        let shown = try Self.authctl(world, "users", "show", "--from", system.rawValue, sample.ada.id)
        #expect(shown.exitCode == 0 && shown.json?["user"]?["id"]?.stringValue == adaID, "\(shown.stderrText)")
    }

    @Test func providerMapBringsOtherProvidersAndRefusesNamesWeCannotSignInWith() throws {
        let directory = TestSupport.temporaryDirectory("import-provider-map")
        defer { TestSupport.removeTree(directory) }
        let file = directory + "/export.json"
        try FileSystem.writeAtomically(file, Array("""
            {"users": [{"localId": "gh1", "createdAt": "1600000000000", "providerUserInfo": [{"providerId": "github.com", "rawId": "42"}]},
                       {"localId": "ms1", "createdAt": "1600000000000", "providerUserInfo": [{"providerId": "microsoft.com", "rawId": "ms-sub"}]}]}
            """.utf8))
        let environment = ["AUTH_STORE": directory + "/store"]
        let run = { (arguments: [String]) throws -> ProcessRunner.Output in
            try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["users", "import", "--from", "firebase"] + arguments,
                                  environment: environment)
        }
        let output = try run(["--provider-map", "microsoft.com=entra", file])
        #expect(output.exitCode == 0, "\(output.stderrText)")
        #expect(output.json?["imported"] == .number(1) && output.json?["unmappedProviders"] == ["github.com": .number(1)], "\(output.stdoutText)")
        #expect(output.json?["skipped"]?.arrayValue?.first?["reason"]?.stringValue?.contains("--provider-map") == true)
        let table = LocalTable(directory: directory + "/store", clock: SystemClock())
        #expect(try table.getItem(TableKey(pk: "IDENTITY#entra#ms-sub", sk: "LINK"))?["userId"]
                == .s(ImportedAccount.userID(system: "firebase", sourceID: "ms1")))
        for refused in ["microsoft.com=passkey", "microsoft.com=Not A Name", "noequals"] {
            let usage = try run(["--provider-map", refused, file])
            #expect(usage.exitCode == 2 && usage.stderrText.contains("--provider-map"), "\(refused): \(usage.stderrText)")
        }
    }

    /// DynamoDB's path on a table that is not the local store's bulk path: users packed into
    /// transactions of at most 100 actions, a cancelled one settled user by user, throttling that
    /// outlasts the client's retries waited out with growing pauses.
    @Test func transactionsOfManyUsersSettleConflictsAndBackOffWhenThrottled() throws {
        let directory = TestSupport.temporaryDirectory("import-transactions")
        defer { TestSupport.removeTree(directory) }
        let table = ThrottledTable(LocalTable(directory: directory, clock: SystemClock()), failures: 2)
        let sleeper = RecordingSleeper()
        let sample = ImportSample.of(.firebase)
        // Linus's Google identity belongs to someone here already.
        try table.putItem(Keys.identityLink(.google, sample.linus.google).item.merging(["userId": .s("someoneelse")]) { $1 })
        let users = try ImportSystem.firebase.read(FileSystem.readFile(sample.path))
        let summary = try UserImport(system: .firebase, sleeper: sleeper).run(users, into: table)
        #expect(summary.imported == 4 && summary.skipped.count == 3, "\(summary.json)")
        #expect(sleeper.delays == [1, 2])
        #expect(table.transactions.withLock { $0 } <= 6, "packed, not one user a request")
        let again = try UserImport(system: .firebase, sleeper: sleeper).run(users, into: table)
        #expect(again.imported == 0 && again.alreadyPresent == 4 && again.itemsWritten == 0)
    }

    // MARK: - Kills

    /// Every user of the generated export is whole (profile, both sides of each identity, the
    /// claim on a verified email) or absent, in one scan of the table; returns how many are whole.
    static func wholeUsers(_ count: Int, prefix: String = "k", table: any Table) throws -> Int {
        // One scan on DynamoDB (a request per key would be most of the test); reads by key on the
        // local store, whose scan reads every shard file.
        var stored: Set<TableKey>?
        if !(table is LocalTable) {
            var keys: Set<TableKey> = []
            var start: Item?
            repeat {
                let page = try table.scan(limit: nil, exclusiveStartKey: start)
                for item in page.items { if let key = TableKey(item: item) { keys.insert(key) } }
                start = page.lastEvaluatedKey
            } while start != nil
            stored = keys
        }
        var whole = 0
        for index in 0..<count {
            let userID = ImportedAccount.userID(system: "firebase", sourceID: "\(prefix)\(index)")
            var keys = [Keys.profileKey(userID), Keys.identityLink(.google, "9\(prefix)\(index)"),
                        Keys.userIdentity(userID, .google, subject: "9\(prefix)\(index)")]
            if index % 3 == 0 {
                keys += [Keys.identityLink(.apple, "apple.\(prefix).\(index)"), Keys.userIdentity(userID, .apple, subject: "apple.\(prefix).\(index)")]
            }
            if index % 5 != 0 { keys.append(Keys.email("\(prefix)\(index)@example.com")) }
            let present = try keys.filter { key throws in try stored.map { $0.contains(key) } ?? (table.getItem(key) != nil) }.count
            #expect(present == 0 || present == keys.count, "user \(index) is half there: \(present) of \(keys.count) items")
            if present == keys.count { whole += 1 }
        }
        return whole
    }

    /// SIGKILL at random points, 20 times on one local store, then a run to the end: after every
    /// kill each user is whole or absent, and the last run leaves every user whole.
    @Test func aKilledImportLeavesNoHalfUserAndARerunFinishesIt() throws {
        let directory = TestSupport.temporaryDirectory("import-kills")
        defer { TestSupport.removeTree(directory) }
        let count = 600
        let file = directory + "/export.json"
        try FileSystem.writeAtomically(file, ImportFixtures.firebaseExport(count))
        let environment = ["AUTH_STORE": directory + "/store"]
        let arguments = ["users", "import", "--from", "firebase", "--batch-items", "37", file]
        var generator = SystemRandomNumberGenerator()
        var wholeAfterKills: [Int] = []
        for _ in 0..<20 {
            let process = try ProcessRunner.start(ProcessRunner.executable("authctl"), arguments: arguments, environment: environment)
            usleep(UInt32.random(in: 5_000...300_000, using: &generator))
            process.kill(SIGKILL)
            _ = process.finish()
            wholeAfterKills.append(try Self.wholeUsers(count, table: LocalTable(directory: directory + "/store", clock: SystemClock())))
        }
        print("import kills on the local store: users whole after each kill \(wholeAfterKills)")
        let last = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: environment)
        #expect(last.exitCode == 0, "\(last.stderrText)")
        #expect(last.json.map { ($0["imported"]?.int64Value ?? -1) + ($0["alreadyPresent"]?.int64Value ?? -1) } == Int64(count), "\(last.stdoutText)")
        #expect(try Self.wholeUsers(count, table: LocalTable(directory: directory + "/store", clock: SystemClock())) == count)
        #expect(wholeAfterKills.contains { $0 > 0 && $0 < count }, "no kill landed mid-way: \(wholeAfterKills)")
    }

    /// The same on moto's DynamoDB, once: a kill mid-way, a rerun, every user whole.
    @Test func aKilledImportOnDynamoDBLeavesNoHalfUser() throws {
        let world = try FlowWorld(backend: .dynamoDB)
        let count = 120
        let file = world.directory + "/export.json"
        try FileSystem.writeAtomically(file, ImportFixtures.firebaseExport(count, prefix: "d"))
        let arguments = ["users", "import", "--from", "firebase", file]
        let started = monotonicSeconds()
        let process = try ProcessRunner.start(ProcessRunner.executable("authctl"), arguments: arguments, environment: world.environment)
        usleep(UInt32.random(in: 300_000...1_500_000))
        process.kill(SIGKILL)
        _ = process.finish()
        let partial = try Self.wholeUsers(count, prefix: "d", table: world.table())
        print("import kill on DynamoDB: \(partial) of \(count) users whole after the kill, \(monotonicSeconds() - started) s")
        let last = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: world.environment)
        print("import rerun on DynamoDB: \(monotonicSeconds() - started) s")
        #expect(last.exitCode == 0, "\(last.stderrText)")
        // A transaction in flight when the kill came may land after the count: at least those.
        #expect((last.json?["alreadyPresent"]?.int64Value ?? -1) >= Int64(partial), "\(last.stdoutText)")
        #expect(try Self.wholeUsers(count, prefix: "d", table: world.table()) == count)
    }
}

/// A table (not the local store's bulk path) whose first transactions fail as throttling does
/// once the client's own retries ran out.
final class ThrottledTable: Table, Sendable {
    let inner: LocalTable
    let failuresLeft: Mutex<Int>
    let transactions = Mutex(0)

    init(_ inner: LocalTable, failures: Int) {
        self.inner = inner
        failuresLeft = Mutex(failures)
    }

    func getItem(_ key: TableKey) throws(TableError) -> Item? { try inner.getItem(key) }
    func putItem(_ item: Item, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        try inner.putItem(item, condition: condition, attributes: attributes)
    }
    func updateItem(_ key: TableKey, update: String, condition: String?, attributes: ExpressionAttributes,
                    returnValues: ReturnValues) throws(TableError) -> Item? {
        try inner.updateItem(key, update: update, condition: condition, attributes: attributes, returnValues: returnValues)
    }
    func deleteItem(_ key: TableKey, condition: String?, attributes: ExpressionAttributes) throws(TableError) {
        try inner.deleteItem(key, condition: condition, attributes: attributes)
    }
    func query(_ request: QueryRequest) throws(TableError) -> QueryPage { try inner.query(request) }
    func scan(limit: Int?, exclusiveStartKey: Item?) throws(TableError) -> QueryPage { try inner.scan(limit: limit, exclusiveStartKey: exclusiveStartKey) }
    func transactWrite(_ actions: [TransactWriteAction]) throws(TableError) {
        let throttled = failuresLeft.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        if throttled { throw .unavailable("ProvisionedThroughputExceededException (retries exhausted)") }
        transactions.withLock { $0 += 1 }
        try inner.transactWrite(actions)
    }
}
