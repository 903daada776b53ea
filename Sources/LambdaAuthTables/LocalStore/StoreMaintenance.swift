import LambdaAuthVerifier
import Synchronization

/// Work the local store leaves for a moment when nobody waits: the checkpoints that this
/// process's writes made due (see LocalTable, "When"). A handler calls `runDue` once its
/// response is out; a process that never does still keeps its log bounded, as a writer
/// checkpoints inline at four times the threshold.
public enum StoreMaintenance {
    /// Checkpoints every local store this process's writes took past the threshold, and returns
    /// what failed (the log still holds every change, so a failure loses nothing; the next write
    /// past the threshold asks again).
    @discardableResult
    public static func runDue() -> [TableError] {
        DueStores.shared.runDue()
    }
}

/// The stores a write left due, by directory. Not the tables themselves: stdin mode's handler,
/// and its table, are gone by the time the response is written, and a process that opens a
/// table per request and never runs maintenance must not keep them all alive. Only writes mark
/// a store, so a process that only read never rewrites a file.
final class DueStores: Sendable {
    static let shared = DueStores()
    private let stores = Mutex<[String: (clock: any WallClock, schema: LocalStoreSchema, checkpointThreshold: Int)]>([:])

    func add(directory: String, clock: any WallClock, schema: LocalStoreSchema, checkpointThreshold: Int) {
        stores.withLock { $0[directory] = (clock, schema, checkpointThreshold) }
    }

    var count: Int { stores.withLock { $0.count } }

    func runDue() -> [TableError] {
        let due = stores.withLock { stores in
            defer { stores.removeAll() }
            return stores
        }
        var failures: [TableError] = []
        for (directory, store) in due {
            do throws(TableError) {
                try LocalTable(directory: directory, clock: store.clock, schema: store.schema, checkpointThreshold: store.checkpointThreshold,
                               dueStores: self).checkpointIfDue()
            } catch {
                failures.append(error)
            }
        }
        return failures
    }
}
