@testable import LambdaAuth
@testable import LambdaAuthTables

/// The store as the product opens it (its index and segment families, `LocalStoreSchema.lambdaAuth`):
/// what these tests were written against, with the knobs only tests turn.
extension LocalTable {
    convenience init(directory: String, clock: any WallClock, checkpointThreshold: Int, dueStores: DueStores = .shared) {
        self.init(directory: directory, clock: clock, schema: .lambdaAuth, checkpointThreshold: checkpointThreshold, dueStores: dueStores)
    }
}

extension StoreLayout {
    init(root: String) {
        self.init(root: root, segmentPrefixes: LocalStoreSchema.lambdaAuth.segmentPrefixes)
    }
}
