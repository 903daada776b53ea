import LambdaAuth

/// Every record of a table's DynamoDB Stream so far, through the DynamoDB Streams API (shard by
/// shard, from the trim horizon): what `authctl replay --events-out` and the moto tests read
/// where Lambda would deliver them to the `events` handler.
public struct DynamoDBStreamReader: Sendable {
    let endpoint: String
    let region: String
    let credentials: AWSCredentials

    public init(endpoint: String, region: String, credentials: AWSCredentials) {
        self.endpoint = endpoint
        self.region = region
        self.credentials = credentials
    }

    func call(_ prefix: String, _ operation: String, _ body: JSONValue) throws(AWSCallError) -> JSONValue {
        let client = AWSJSONClient(
            service: AWSJSONClient.Service(signingName: "dynamodb", targetPrefix: prefix, jsonVersion: "1.0",
                                           displayName: "DynamoDB Streams", maximumResponseBytes: 16 << 20),
            endpoint: endpoint, region: region, credentials: credentials, http: CurlHTTPClient())
        return try client.call(operation, body)
    }

    public struct NoStream: Error, CustomStringConvertible {
        public let description: String
    }

    /// The records in Lambda's shape (`eventID`, `eventName`, `dynamodb`: keys, images, sequence number).
    public func records(table: String) throws -> [JSONValue] {
        let streams = "DynamoDBStreams_20120810."
        guard let arn = try call("DynamoDB_20120810.", "DescribeTable", ["TableName": .string(table)])["Table"]?["LatestStreamArn"] else {
            throw NoStream(description: "table \(table) has no stream")
        }
        var records: [JSONValue] = []
        for shard in try call(streams, "DescribeStream", ["StreamArn": arn])["StreamDescription"]?["Shards"]?.arrayValue ?? [] {
            var iterator = try call(streams, "GetShardIterator", ["StreamArn": arn, "ShardId": shard["ShardId"] ?? .null,
                                                                  "ShardIteratorType": "TRIM_HORIZON"])["ShardIterator"]
            while let current = iterator, !current.isNull {
                let page = try call(streams, "GetRecords", ["ShardIterator": current, "Limit": 1000])
                let got = page["Records"]?.arrayValue ?? []
                records += got
                if got.isEmpty { break }
                iterator = page["NextShardIterator"]
            }
        }
        return records
    }
}
