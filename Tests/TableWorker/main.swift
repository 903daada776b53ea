import LambdaAuth
#if canImport(Glibc)
import Glibc
#endif

// Test-only: one of many processes hammering one local store, for the multi-process and crash
// tests. Every acknowledged write is printed (unbuffered) the moment putItem/transactWrite returns.
//   table-worker counter STORE WORKER COUNT    conditional increments + two-item transactions
//   table-worker crash STORE WORKER            writes until killed, each write followed by the
//                                              maintenance a handler runs after its response
//   table-worker maintain STORE WORKER MARKER  writes past the checkpoint threshold, creates
//                                              MARKER, runs the deferred checkpoint, says so

func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if written <= 0 { exit(3) }
        offset += written
    }
}

/// Retries what a burst of processes makes routine: a lost race or a lock wait over 2 s.
func retrying(_ counts: inout [String: Int], _ body: () throws(TableError) -> Void) {
    while true {
        do {
            try body()
            return
        } catch {
            switch error {
            case .conditionFailed: counts["conflicts", default: 0] += 1
            case .transactionCanceled: counts["cancelled", default: 0] += 1
            case .unavailable: counts["unavailable", default: 0] += 1
            default:
                say("error \(error)")
                exit(1)
            }
        }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3 else {
    say("usage: table-worker counter|crash|maintain STORE WORKER [COUNT|MARKER]")
    exit(2)
}
let table = LocalTable(directory: arguments[1], clock: SystemClock())
let worker = arguments[2]
var counts: [String: Int] = [:]

switch arguments[0] {
case "counter":
    let rounds = Int(arguments.count > 3 ? arguments[3] : "250") ?? 250
    let counter = TableKey(pk: "COUNTER", sk: "TOTAL")
    let from = TableKey(pk: "ACCOUNT#a", sk: "BALANCE"), to = TableKey(pk: "ACCOUNT#b", sk: "BALANCE")
    for _ in 0..<rounds {
        retrying(&counts) { () throws(TableError) in
            // Read, then write back only if nobody changed it in between.
            let current = try table.getItem(counter)
            var next = counter.item
            if let value = current?["value"]?.int64Value {
                next["value"] = .n(value + 1)
                try table.putItem(next, condition: "#v = :old", attributes: .init(names: ["#v": "value"], values: [":old": .n(value)]))
            } else {
                next["value"] = .n(1)
                try table.putItem(next, condition: "attribute_not_exists(PK)", attributes: .init())
            }
        }
        retrying(&counts) { () throws(TableError) in
            let one = ExpressionAttributes(names: ["#b": "balance"], values: [":one": .n(1), ":zero": .n(0)])
            try table.transactWrite([
                .update(key: from, update: "SET #b = if_not_exists(#b, :zero) - :one", attributes: one),
                .update(key: to, update: "SET #b = if_not_exists(#b, :zero) + :one", attributes: one),
            ])
        }
    }
    say("done conflicts=\(counts["conflicts", default: 0]) unavailable=\(counts["unavailable", default: 0])")
case "crash":
    var sequence = 0
    while true {
        sequence += 1
        if sequence % 3 == 0 {
            retrying(&counts) { () throws(TableError) in
                var first = TableKey(pk: "WORKER#\(worker)", sk: "TX#\(sequence)#a").item
                first["payload"] = .s(String(repeating: "t", count: 1500))
                try table.transactWrite([
                    .put(first, condition: "attribute_not_exists(PK)"),
                    .put(TableKey(pk: "WORKER#\(worker)", sk: "TX#\(sequence)#b").item, condition: "attribute_not_exists(PK)"),
                ])
            }
            say("tx \(sequence)")
        } else {
            retrying(&counts) { () throws(TableError) in
                var item = TableKey(pk: "WORKER#\(worker)", sk: "PUT#\(sequence)").item
                item["payload"] = .s(String(repeating: "p", count: 1500))
                item["GSI1PK"] = .s("SEQ#\(worker)#\(sequence)")
                item["GSI1SK"] = .s("PUT")
                try table.putItem(item)
            }
            say("put \(sequence)")
        }
        StoreMaintenance.runDue()
    }
case "maintain":
    guard arguments.count > 3 else {
        say("maintain needs a MARKER path")
        exit(2)
    }
    // One partition per item, so the checkpoint writes many files and a kill can land anywhere in it.
    // 40 items of about 800 bytes: past the checkpoint threshold (16 KB), under the inline cap
    // (64 KB), so the checkpoint is the deferred one.
    for index in 0..<40 {
        retrying(&counts) { () throws(TableError) in
            var item = TableKey(pk: "MAINTAIN#\(worker)#\(index)", sk: "ITEM").item
            item["payload"] = .s(String(repeating: "m", count: 700))
            try table.putItem(item)
        }
        say("put \(index)")
    }
    let marker = open(arguments[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    close(marker)
    let failures = StoreMaintenance.runDue()
    say(failures.isEmpty ? "maintained" : "maintenance failed: \(failures)")
default:
    say("unknown mode \(arguments[0])")
    exit(2)
}
