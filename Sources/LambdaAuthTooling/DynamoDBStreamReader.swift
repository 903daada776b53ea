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

    /// Reads a table's stream as it grows: each `next()` returns the records written since the
    /// last one (`authctl replay --events-out` calls it after each step, so that a step's records
    /// are told from the next step's without reading the whole stream again each time).
    public struct Follower {
        let reader: DynamoDBStreamReader
        let table: String
        /// The sequence number of the last record read from each shard. An iterator is asked for
        /// anew each time, after that record: one kept across writes can go stale (moto's, after
        /// a transaction it rolled back, reads a copy of the shard that no longer grows).
        private var lastRead: [String: String] = [:]
        private var streamARN: JSONValue?
        /// The stream's shards, listed once: a replayed scenario's table never splits its one
        /// shard, and each call saved is one less for a serial moto shared by every suite
        /// (`authctl replay --events-out` checks the steps' reads against a whole read at the end).
        private var shards: [String] = []

        public init(_ reader: DynamoDBStreamReader, table: String) {
            self.reader = reader
            self.table = table
        }

        public mutating func next() throws -> [JSONValue] {
            let streams = "DynamoDBStreams_20120810."
            if streamARN == nil {
                guard let arn = try reader.call("DynamoDB_20120810.", "DescribeTable", ["TableName": .string(table)])["Table"]?["LatestStreamArn"] else {
                    throw NoStream(description: "table \(table) has no stream")
                }
                streamARN = arn
                shards = (try reader.call(streams, "DescribeStream", ["StreamArn": arn])["StreamDescription"]?["Shards"]?.arrayValue ?? [])
                    .compactMap { $0["ShardId"]?.stringValue }
            }
            let arn = streamARN ?? .null
            var records: [JSONValue] = []
            for id in shards {
                var request: JSONValue = ["StreamArn": arn, "ShardId": .string(id), "ShardIteratorType": "TRIM_HORIZON"]
                if let last = lastRead[id] {
                    request = ["StreamArn": arn, "ShardId": .string(id), "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
                               "SequenceNumber": .string(last)]
                }
                var iterator = try reader.call(streams, "GetShardIterator", request)["ShardIterator"]
                while let current = iterator, !current.isNull {
                    let page = try reader.call(streams, "GetRecords", ["ShardIterator": current, "Limit": 1000])
                    let got = page["Records"]?.arrayValue ?? []
                    if got.isEmpty { break }
                    records += got
                    if let last = got.last?["dynamodb"]?["SequenceNumber"]?.stringValue { lastRead[id] = last }
                    iterator = page["NextShardIterator"]
                }
            }
            return records
        }
    }
}
