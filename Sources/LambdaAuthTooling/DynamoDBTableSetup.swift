import LambdaAuth

/// Creating the single table of the contract (section 6) on a DynamoDB endpoint:
/// `authctl store create-table`, and the tests against moto.
extension DynamoDBTable {
    public struct SetupReport: Sendable, Equatable {
        /// False when the table already existed (its key schema is then checked, not changed).
        public var created: Bool
        /// False when TTL on `ttl` was already enabled.
        public var enabledTTL: Bool
    }

    /// `PK`/`SK` strings, GSI1 on `GSI1PK`/`GSI1SK` projecting everything, on-demand billing, TTL
    /// on `ttl`. Idempotent: an existing table with the same keys is accepted as it is.
    /// - Parameter pollLimit: DescribeTable polls (half a second apart) before giving up waiting
    ///   for the table to become ACTIVE.
    public func createTable(sleeper: any Sleeper = SystemSleeper(), pollLimit: Int = 120) throws(TableError) -> SetupReport {
        func attribute(_ name: String) -> JSONValue { ["AttributeName": .string(name), "AttributeType": "S"] }
        func key(_ name: String, _ type: String) -> JSONValue { ["AttributeName": .string(name), "KeyType": .string(type)] }
        let created = try client.call("CreateTable", [
            "TableName": .string(tableName),
            "AttributeDefinitions": [attribute("PK"), attribute("SK"), attribute("GSI1PK"), attribute("GSI1SK")],
            "KeySchema": [key("PK", "HASH"), key("SK", "RANGE")],
            "GlobalSecondaryIndexes": [[
                "IndexName": .string(Keys.tokenHashIndex),
                "KeySchema": [key("GSI1PK", "HASH"), key("GSI1SK", "RANGE")],
                "Projection": ["ProjectionType": "ALL"],
            ]],
            "BillingMode": "PAY_PER_REQUEST",
            // The events handler reads it (contract section 22): both images, so a change alone tells what happened.
            "StreamSpecification": ["StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"],
        ], tolerating: ["ResourceInUseException"]) != nil

        var polls = 0
        while true {
            let description = try client.call("DescribeTable", ["TableName": .string(tableName)])["Table"]
            if !created { try DynamoDBTable.checkKeySchema(description) }
            if description?["TableStatus"]?.stringValue == "ACTIVE" { break }
            polls += 1
            guard polls < pollLimit else {
                throw .unavailable("table \(tableName) did not become ACTIVE after \(polls) checks")
            }
            sleeper.sleep(seconds: 0.5)
        }

        let ttl = try client.call("DescribeTimeToLive", ["TableName": .string(tableName)])["TimeToLiveDescription"]
        let status = ttl?["TimeToLiveStatus"]?.stringValue ?? "DISABLED"
        if status == "ENABLED" || status == "ENABLING" {
            guard ttl?["AttributeName"]?.stringValue == "ttl" else {
                throw .invalidRequest("table \(tableName) has TTL on \(ttl?["AttributeName"]?.stringValue ?? "?"), not on ttl")
            }
            return SetupReport(created: created, enabledTTL: false)
        }
        _ = try client.call("UpdateTimeToLive", [
            "TableName": .string(tableName),
            "TimeToLiveSpecification": ["Enabled": true, "AttributeName": "ttl"],
        ])
        return SetupReport(created: created, enabledTTL: true)
    }

    /// An existing table must have the contract's keys, or every later write would fail obscurely.
    private static func checkKeySchema(_ description: JSONValue?) throws(TableError) {
        func keys(_ schema: JSONValue?) -> [String] {
            (schema?.arrayValue ?? []).map { "\($0["AttributeName"]?.stringValue ?? "")/\($0["KeyType"]?.stringValue ?? "")" }
        }
        guard keys(description?["KeySchema"]) == ["PK/HASH", "SK/RANGE"] else {
            throw .invalidRequest("the existing table's key schema is not PK (HASH) / SK (RANGE)")
        }
        let index = description?["GlobalSecondaryIndexes"]?.arrayValue?.first { $0["IndexName"]?.stringValue == Keys.tokenHashIndex }
        guard keys(index?["KeySchema"]) == ["GSI1PK/HASH", "GSI1SK/RANGE"] else {
            throw .invalidRequest("the existing table has no GSI1 on GSI1PK (HASH) / GSI1SK (RANGE)")
        }
    }
}
