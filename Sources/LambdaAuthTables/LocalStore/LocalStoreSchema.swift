/// What the local store must know of the key layout it holds, given by whoever opens it (the
/// product's spellings live with the product: LambdaAuth's `Keys`). DynamoDB needs neither: it
/// knows its own indexes, and its storage does not care how sort keys group.
public struct LocalStoreSchema: Sendable {
    /// The one global secondary index (on `GSI1PK` / `GSI1SK`); a query naming another is refused,
    /// as DynamoDB refuses it.
    public var indexName: String
    /// Sort-key families kept apart from the rest of their partition, each in a file of its own
    /// (`<PK>~<family>.json`): families that grow with use (a product's sessions and tokens),
    /// while most reads want a partition's few other items. A query whose sort-key condition
    /// cannot match a family never opens its file. Each prefix ends with its separator (`#`),
    /// which the file name leaves out; the first prefix a sort key starts with decides.
    public var segmentPrefixes: [String]
    /// What the change log (`<store>/changes`, LocalStore/ChangeLog.swift) keeps.
    public var changeLog: ChangeLogFilter

    public init(indexName: String, segmentPrefixes: [String], changeLog: ChangeLogFilter = .none) {
        self.indexName = indexName
        self.segmentPrefixes = segmentPrefixes
        self.changeLog = changeLog
    }
}

/// Which changes the local store's change log keeps, and how an erasure finds the records it must
/// take with it: the opener's to say, since only it knows which items its readers read and what
/// an account is in its layout. The log is on the developer's disk, so it keeps only what its
/// readers need (no secret an item holds is copied there) and nothing of an erased account.
public struct ChangeLogFilter: Sendable {
    /// The attributes kept of the item under a key (its key attributes among them); nil: no
    /// record of that item is kept.
    public var keptAttributes: @Sendable (TableKey) -> Set<String>?
    /// The sort key of the item that stands for an account in its partition; nil when the
    /// layout has no accounts. An erasure (`LocalTable.eraseDeletedItems`) takes every record of
    /// a partition whose account item was removed, or that lost items while holding none.
    public var accountSortKey: String?
    /// The account's id that an erased partition's key carries: records holding it anywhere (in
    /// their keys or images) go too.
    public var accountID: @Sendable (_ partitionKey: String) -> String?

    public init(keptAttributes: @escaping @Sendable (TableKey) -> Set<String>?, accountSortKey: String?,
                accountID: @escaping @Sendable (_ partitionKey: String) -> String?) {
        self.keptAttributes = keptAttributes
        self.accountSortKey = accountSortKey
        self.accountID = accountID
    }

    /// Keeps nothing, as a table without a stream.
    public static let none = ChangeLogFilter(keptAttributes: { _ in nil }, accountSortKey: nil, accountID: { _ in nil })

    /// The change as the log keeps it: its images cut to `keptAttributes`; nil when its item is
    /// not kept or nothing kept changed.
    func kept(_ change: ItemChange) -> ItemChange? {
        keptAttributes(change.key).flatMap(change.keeping)
    }
}
