import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling

/// `authctl users import` (contract section 24): 100,000 users of a generated Firebase export into
/// a new local store, read and parsed from the file as authctl does (target: under 60 s), and a
/// second run of the same file (writes nothing); then on moto's DynamoDB, what each user costs in
/// requests and transactional item writes. Beside the store section's own 100k-user import.
enum ImportBench {
    static var section: BenchSection { BenchSection(name: "import", run: run) }
    static let users = 100_000
    static let motoUsers = 500

    static func run(_ table: inout BenchTable) {
        guard let root = try? FileSystem.makeTemporaryDirectory(prefix: "auth-bench-import") else {
            table.add("import", "setup", "no temporary directory")
            return
        }
        defer { FileSystem.removeTree(root) }
        do {
            let file = root + "/firebase-users.json"
            try FileSystem.writeAtomically(file, ImportFixtures.firebaseExport(users), durable: false)
            let store = LocalTable(directory: root + "/store", clock: SystemClock())
            var summary: UserImport.Summary?
            let seconds = try StoreBench.timed {
                let records = try ImportSystem.firebase.read(FileSystem.readFile(file, limit: 1 << 32))
                summary = try UserImport(system: .firebase).run(records, into: store)
            }
            let written = summary.map { "\($0.imported) users, \($0.itemsWritten) items, \($0.writeRequests) commits" } ?? ""
            table.add("import", "Firebase export, \(users) users into the local store (\(written))", "\(format(seconds)) s", target: "< 60 s")
            let again = try StoreBench.timed {
                let records = try ImportSystem.firebase.read(FileSystem.readFile(file, limit: 1 << 32))
                summary = try UserImport(system: .firebase).run(records, into: store)
            }
            table.add("import", "the same file again (\(summary?.alreadyPresent ?? 0) already present, \(summary?.itemsWritten ?? -1) items written)",
                      "\(format(again)) s")
        } catch {
            table.add("import", "local store", "failed: \(error)")
        }
        do {
            let moto = try MotoServer.shared()
            let dynamo = try moto.makeTable(prefix: "bench-import")
            let records = try ImportSystem.firebase.read(ImportFixtures.firebaseExport(motoUsers, prefix: "m"))
            let before = dynamo.client.requestCount
            let start = monotonicSeconds()
            let summary = try UserImport(system: .firebase).run(records, into: dynamo)
            let seconds = monotonicSeconds() - start
            let requests = dynamo.client.requestCount - before
            let perUser = { (value: Int) in format(Double(value) / Double(max(1, summary.imported))) }
            table.add("import", "moto DynamoDB, \(motoUsers) users: TransactWriteItems requests per user",
                      "\(perUser(requests)) (\(requests) requests, \(format(seconds, decimals: 1)) s)")
            table.add("import", "moto DynamoDB: items written per user (each 2 write units, transactional)",
                      "\(perUser(summary.itemsWritten)) (\(summary.itemsWritten) items)")
            let rerunBefore = dynamo.client.requestCount
            let again = try UserImport(system: .firebase).run(records, into: dynamo)
            table.add("import", "moto DynamoDB: the same file again, requests per user (GetItem of each profile; \(again.itemsWritten) items written)",
                      perUser(dynamo.client.requestCount - rerunBefore))
        } catch {
            table.add("import", "moto DynamoDB", "not measured: \(error)")
        }
    }
}
