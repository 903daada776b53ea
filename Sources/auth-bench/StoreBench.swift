import Crypto
import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// Issue 3's targets: a putItem and a GSI1 query cost about the same on 100 users and on 100,000
/// users (ratio ≤ 1.5), both tables filled through the import path; plus the export+import round
/// trip of the large table. Everything lives in a temporary directory that is removed afterwards.
enum StoreBench {
    static var section: BenchSection { BenchSection(name: "store", run: run) }
    static let sampleCount = 400

    static func run(_ table: inout BenchTable) {
        var template = Array("/tmp/auth-bench-store-XXXXXX".utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            table.add("store", "setup", "mkdtemp failed")
            return
        }
        let root = String(cString: created)
        defer { _ = system("rm -rf '\(root)'") }
        do {
            let sizes = [100, 100_000]
            var tables: [LocalTable] = []
            for users in sizes {
                let store = "\(root)/store-\(users)"
                let file = "\(root)/users-\(users).jsonl"
                try writeImportFile(file, users: users)
                let importSeconds = try timed { _ = try importFile(file, into: store) }
                table.add("store", "import \(users) users (\(users * 4) items)", "\(format(importSeconds)) s", target: "< 60 s")
                tables.append(LocalTable(directory: store, clock: SystemClock()))
            }
            // Both sizes are measured in alternation, so that the disk's mood (fdatasync latency
            // swings with whatever else the machine writes) weighs on both alike.
            let puts = try measurePuts(tables, users: sizes)
            let queries = try measureIndexQueries(tables, users: sizes)
            for (index, users) in sizes.enumerated() {
                table.add("store", "putItem median (mean) @ \(users) users",
                          "\(format(puts[index].median, decimals: 0)) µs (\(format(puts[index].mean, decimals: 0)) µs)")
                table.add("store", "GSI1 query median @ \(users) users", "\(format(queries[index].repeated, decimals: 0)) µs")
                table.add("store", "GSI1 query median, first touch @ \(users) users", "\(format(queries[index].first, decimals: 0)) µs")
            }
            table.add("store", "putItem cost ratio 100k/100", format(puts[1].median / puts[0].median), target: "≤ 1.5")
            table.add("store", "GSI1 query cost ratio 100k/100", format(queries[1].repeated / queries[0].repeated), target: "≤ 1.5")
            table.add("store", "GSI1 first-touch ratio 100k/100", format(queries[1].first / queries[0].first), target: "(cold page cache; not the issue's target)")
            let exportFile = "\(root)/export.jsonl"
            var exported = 0
            let roundTrip = try timed {
                let descriptor = open(exportFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                exported = try TableTransfer.export(LocalTable(directory: "\(root)/store-100000", clock: SystemClock()),
                                                    to: descriptor, path: exportFile)
                close(descriptor)
                _ = try importFile(exportFile, into: "\(root)/store-copy")
            }
            table.add("store", "export+import round trip, \(exported) items", "\(format(roundTrip)) s")
        } catch {
            table.add("store", "failed", "\(error)")
        }
    }

    static func timed(_ body: () throws -> Void) rethrows -> Double {
        let start = monotonicSeconds()
        try body()
        return monotonicSeconds() - start
    }

    static func tokenHash(_ user: Int, _ token: Int = 0) -> String {
        Keys.tokenHashIndexKey(hash: SHA256.hexDigest(of: Array("token-\(user)-\(token)".utf8)))
    }

    /// The contract's item kinds (section 6): profile, identity link (both sides), verified email,
    /// and one refresh token findable by its hash through GSI1.
    static func writeImportFile(_ path: String, users: Int) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileSystem.Failure(path: path, operation: "open", errno: errno) }
        defer { close(descriptor) }
        var buffer: [UInt8] = []
        for user in 0..<users {
            let id = "u\(user)", email = "user\(user)@example.com", subject = "10000\(user)"
            let created: AttributeValue = .s("2026-01-01T00:00:00Z")
            buffer += TableTransfer.line(Keys.profileKey(id).item + ["email": .s(email),
                                          "emailVerified": .bool(true), "displayName": .s("User \(user)"),
                                          "createdAt": created, "updatedAt": created])
            buffer += TableTransfer.line(Keys.identityLink(.google, subject).item + ["userId": .s(id),
                                          "provider": .s("google"), "subject": .s(subject), "linkedAt": created])
            buffer += TableTransfer.line(Keys.email(email).item + ["userId": .s(id)])
            buffer += TableTransfer.line(Keys.refreshToken(id, "t\(user)").item + ["GSI1PK": .s(tokenHash(user)),
                                          "GSI1SK": .s(Keys.tokenHashIndexSortKey), "familyId": .s("s\(user)"), "status": .s("ACTIVE"),
                                          "expiresAt": .n(4_000_000_000), "ttl": .n(4_000_000_000)])
            if buffer.count > 1 << 20 {
                try FileSystem.writeAll(descriptor, buffer, path: path)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try FileSystem.writeAll(descriptor, buffer, path: path)
    }

    static func importFile(_ path: String, into store: String) throws -> Int {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileSystem.Failure(path: path, operation: "open", errno: errno) }
        defer { close(descriptor) }
        return try TableTransfer.importLines(from: descriptor, path: path, into: LocalTable(directory: store, clock: SystemClock()))
    }

    /// New refresh items, as sign-in writes them (each one also lands in GSI1). The median is one
    /// log append; checkpoints, every ~150 puts, show in the mean.
    static func measurePuts(_ tables: [LocalTable], users: [Int]) throws -> [(median: Double, mean: Double)] {
        var samples = Array(repeating: [Double](), count: tables.count)
        var generator = SystemRandomNumberGenerator()
        for sample in 0..<sampleCount {
            for (index, table) in tables.enumerated() {
                let user = Int.random(in: 0..<users[index], using: &generator)
                let item: Item = Keys.refreshToken("u\(user)", "bench\(sample)").item + [
                                  "GSI1PK": .s(tokenHash(user, sample + 1)), "GSI1SK": .s(Keys.tokenHashIndexSortKey), "familyId": .s("s\(user)"),
                                  "status": .s("ACTIVE"), "ttl": .n(4_000_000_000)]
                let start = monotonicSeconds()
                try table.putItem(item)
                samples[index].append((monotonicSeconds() - start) * 1_000_000)
            }
        }
        return samples.map { (percentile($0, 0.5), $0.reduce(0, +) / Double($0.count)) }
    }

    /// The refresh flow's lookup: GSI1PK = the token's hash, on tokens spread over the whole
    /// table. Each token is looked up twice: the first lookup is the first touch of its files
    /// since the import (page cache permitting), the second the steady state of a warm store.
    static func measureIndexQueries(_ tables: [LocalTable], users: [Int]) throws -> [(first: Double, repeated: Double)] {
        var first = Array(repeating: [Double](), count: tables.count), repeated = first
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<sampleCount {
            for (index, table) in tables.enumerated() {
                let user = Int.random(in: 0..<users[index], using: &generator)
                let request = QueryRequest(indexName: Keys.tokenHashIndex, keyCondition: "GSI1PK = :h",
                                           attributes: ExpressionAttributes(values: [":h": .s(tokenHash(user))]))
                for pass in 0..<2 {
                    let start = monotonicSeconds()
                    let page = try table.query(request)
                    let micros = (monotonicSeconds() - start) * 1_000_000
                    if pass == 0 { first[index].append(micros) } else { repeated[index].append(micros) }
                    guard page.items.count == 1 else {
                        throw TableError.corrupted("GSI1 lookup of user \(user) found \(page.items.count) items")
                    }
                }
            }
        }
        return zip(first, repeated).map { (percentile($0, 0.5), percentile($1, 0.5)) }
    }
}
