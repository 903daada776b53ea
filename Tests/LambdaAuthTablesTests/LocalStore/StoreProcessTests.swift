import LambdaAuth
import LambdaAuthTables
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real processes on one store: isolation under contention, and durability under kill -9.
@Suite(.serialized) struct StoreProcessTests {
    static var worker: String { ProcessRunner.executable("table-worker") }

    @Test func eightProcessesIncrementAndTransferExactly() throws {
        let root = TestSupport.temporaryDirectory("store-processes")
        defer { TestSupport.removeTree(root) }
        let store = root + "/store"
        let processes = try (0..<8).map { try ProcessRunner.start(Self.worker, arguments: ["counter", store, "\($0)", "250"]) }
        let outputs = processes.map { $0.finish() }
        for output in outputs {
            #expect(output.exitCode == 0, "worker failed: \(output.stdoutText) \(output.stderrText)")
            #expect(output.stdoutText.hasPrefix("done"))
        }
        let table = LocalTable(directory: store, clock: SystemClock())
        #expect(try table.getItem(TableKey(pk: "COUNTER", sk: "TOTAL"))?["value"]?.int64Value == 2000,
                "every conditional increment counted exactly once")
        let from = try table.getItem(TableKey(pk: "ACCOUNT#a", sk: "BALANCE"))?["balance"]?.int64Value
        let to = try table.getItem(TableKey(pk: "ACCOUNT#b", sk: "BALANCE"))?["balance"]?.int64Value
        #expect(from == -2000 && to == 2000, "2,000 transactions, none half-applied")
    }

    @Test func killedWritersLoseNoAcknowledgedWrite() throws {
        let root = TestSupport.temporaryDirectory("store-crash")
        defer { TestSupport.removeTree(root) }
        let store = root + "/store"
        var generator = SystemRandomNumberGenerator()
        var kills = 0
        var acknowledged: [String: (puts: [Int], transactions: [Int])] = [:]
        for round in 0..<10 {
            let workers = try (0..<5).map { index in
                (name: "\(round)-\(index)", process: try ProcessRunner.start(Self.worker, arguments: ["crash", store, "\(round)-\(index)"]))
            }
            // Random moments: some before the first write, most in the middle of the write loop
            // (and of the checkpoints the workers run after their writes, as a handler does after
            // its response, every ~30 writes with these 1.5 KB items).
            for worker in workers.shuffled(using: &generator) {
                usleep(UInt32.random(in: 5_000...120_000, using: &generator))
                worker.process.kill(SIGKILL)
                kills += 1
            }
            for worker in workers {
                let output = worker.process.finish()
                #expect(output.signal == SIGKILL, "worker \(worker.name) ended by itself: \(output.stdoutText.suffix(200))")
                var puts: [Int] = [], transactions: [Int] = []
                for line in output.stdoutText.split(separator: "\n") {
                    let parts = line.split(separator: " ")
                    guard parts.count == 2, let sequence = Int(parts[1]) else { continue }
                    if parts[0] == "put" { puts.append(sequence) } else if parts[0] == "tx" { transactions.append(sequence) }
                }
                acknowledged[worker.name] = (puts, transactions)
            }
            try verify(store, acknowledged)
        }
        #expect(kills == 50)
        let total = acknowledged.values.reduce(0) { $0 + $1.puts.count + $1.transactions.count }
        #expect(total > 50, "the workers got to write before being killed (\(total) acknowledged writes)")
        #expect(FileSystem.exists(store + "/items"), "checkpoints ran (and were interrupted) along the way")
    }

    /// Kills aimed at the deferred checkpoint: each worker writes past the threshold, marks the
    /// moment its maintenance starts, and is killed a fraction of a maintenance's duration later
    /// (measured first, the shorter of two: a syncfs also flushes whatever else the machine
    /// wrote), so the kills step through the checkpoint's phases. Every acknowledged write must
    /// survive each kill.
    @Test func killsDuringMaintenanceLoseNoAcknowledgedWrite() throws {
        let root = TestSupport.temporaryDirectory("store-maintenance-crash")
        defer { TestSupport.removeTree(root) }
        let store = root + "/store"
        var acknowledged: [String: [Int]] = [:]
        var duration = Double.infinity, interrupted = 0
        let fractions: [Double?] = [nil, nil] + stride(from: 0.0, through: 1.05, by: 0.075).map { $0 }
        for (round, fraction) in fractions.enumerated() {
            let marker = root + "/maintaining-\(round)"
            let process = try ProcessRunner.start(Self.worker, arguments: ["maintain", store, "\(round)", marker])
            let deadline = monotonicSeconds() + 20
            while !FileSystem.exists(marker), monotonicSeconds() < deadline { usleep(100) }
            #expect(FileSystem.exists(marker), "round \(round): the worker never reached its maintenance")
            let started = monotonicSeconds()
            if let fraction {
                usleep(UInt32(duration * fraction * 1_000_000))
                process.kill(SIGKILL)
            }
            let output = process.finish()
            if fraction == nil { duration = min(duration, monotonicSeconds() - started) }
            let lines = output.stdoutText.split(separator: "\n")
            acknowledged["\(round)"] = lines.compactMap { line in line.hasPrefix("put ") ? Int(line.dropFirst(4)) : nil }
            #expect(!lines.contains { $0.hasPrefix("maintenance failed") }, "\(output.stdoutText.suffix(300))")
            if !lines.contains("maintained") && output.signal == SIGKILL { interrupted += 1 }

            let table = LocalTable(directory: store, clock: SystemClock())
            for (worker, indexes) in acknowledged {
                for index in indexes {
                    #expect(try table.getItem(TableKey(pk: "MAINTAIN#\(worker)#\(index)", sk: "ITEM")) != nil,
                            "acknowledged write \(index) of round \(worker) is missing after round \(round)")
                }
            }
        }
        #expect(acknowledged.values.allSatisfy { $0.count == 40 }, "every worker wrote before its maintenance")
        #expect(interrupted > 0, "no kill landed inside a checkpoint (one took \(Int(duration * 1000)) ms)")
        #expect(FileSystem.exists(store + "/items"), "checkpoints ran")
    }

    /// A fresh process view of the store: it opens, every acknowledged write is there, and every
    /// transaction is whole.
    private func verify(_ store: String, _ acknowledged: [String: (puts: [Int], transactions: [Int])]) throws {
        let table = LocalTable(directory: store, clock: SystemClock())
        for (worker, writes) in acknowledged {
            var start: Item?
            var sortKeys: Set<String> = []
            repeat {
                let page = try table.query(QueryRequest(keyCondition: "PK = :p", attributes: .init(values: [":p": .s("WORKER#\(worker)")]),
                                                        limit: 500, exclusiveStartKey: start))
                for item in page.items { sortKeys.insert(item["SK"]?.stringValue ?? "") }
                start = page.lastEvaluatedKey
            } while start != nil
            for sequence in writes.puts {
                #expect(sortKeys.contains("PUT#\(sequence)"), "acknowledged put \(sequence) of \(worker) is missing")
            }
            for sequence in writes.transactions {
                #expect(sortKeys.contains("TX#\(sequence)#a") && sortKeys.contains("TX#\(sequence)#b"),
                        "acknowledged transaction \(sequence) of \(worker) is missing")
            }
            for key in sortKeys where key.hasPrefix("TX#") {
                let base = String(key.dropLast(2))
                #expect(sortKeys.contains(base + "#a") && sortKeys.contains(base + "#b"), "half a transaction: \(key)")
            }
            if let last = writes.puts.last {
                let indexed = try table.query(QueryRequest(indexName: "GSI1", keyCondition: "GSI1PK = :s",
                                                           attributes: .init(values: [":s": .s("SEQ#\(worker)#\(last)")])))
                #expect(indexed.items.count == 1, "the index finds acknowledged put \(last) of \(worker)")
            }
        }
    }
}
