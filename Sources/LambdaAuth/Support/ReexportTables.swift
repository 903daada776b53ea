// The tables (the Table interface, the local store, DynamoDB) live in their own target, which
// knows nothing of the product; the rest of LambdaAuth, the tools and the tests see them as part
// of LambdaAuth, with the product's layout (Tables/TableFactory.swift).
@_exported import LambdaAuthTables
