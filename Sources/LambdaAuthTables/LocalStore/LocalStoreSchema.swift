/// What the local store must know of the key layout it holds, given by whoever opens it (the
/// product's spellings live with the product: LambdaAuth's `Keys`). DynamoDB needs neither: it
/// knows its own indexes, and its storage does not care how sort keys group.
public struct LocalStoreSchema: Sendable, Equatable {
    /// The one global secondary index (on `GSI1PK` / `GSI1SK`); a query naming another is refused,
    /// as DynamoDB refuses it.
    public var indexName: String
    /// Sort-key families kept apart from the rest of their partition, each in a file of its own
    /// (`<PK>~<family>.json`): families that grow with use (a product's sessions and tokens),
    /// while most reads want a partition's few other items. A query whose sort-key condition
    /// cannot match a family never opens its file. Each prefix ends with its separator (`#`),
    /// which the file name leaves out; the first prefix a sort key starts with decides.
    public var segmentPrefixes: [String]

    public init(indexName: String, segmentPrefixes: [String]) {
        self.indexName = indexName
        self.segmentPrefixes = segmentPrefixes
    }
}
