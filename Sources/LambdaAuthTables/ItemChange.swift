import Crypto
import LambdaAuthVerifier

/// One committed change of one item, as a DynamoDB Stream record (view type NEW_AND_OLD_IMAGES)
/// tells it. The local store's change log keeps the same records, so both backends publish from
/// this one shape (contract section 22). The tables' own: the change log writes and reads it.
public struct ItemChange: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case insert = "INSERT"
        case modify = "MODIFY"
        case remove = "REMOVE"
    }

    /// The stream's id of this record: what an event's id derives from, so a redelivered batch
    /// yields the same ids.
    public var eventID: String
    /// Increases along a shard (one partition's changes keep their order). Decimal digits.
    public var sequenceNumber: String
    public var kind: Kind
    public var key: TableKey
    public var oldImage: Item?
    public var newImage: Item?
    /// When the change was committed, epoch milliseconds.
    public var committedAt: Int64
    /// DynamoDB's TTL sweeper removed the item (a REMOVE with the service's identity): no request
    /// made this change.
    public var byTimeToLive: Bool

    public init(eventID: String, sequenceNumber: String, kind: Kind, key: TableKey, oldImage: Item?, newImage: Item?,
                committedAt: Int64, byTimeToLive: Bool = false) {
        self.eventID = eventID
        self.sequenceNumber = sequenceNumber
        self.kind = kind
        self.key = key
        self.oldImage = oldImage
        self.newImage = newImage
        self.committedAt = committedAt
        self.byTimeToLive = byTimeToLive
    }

    /// From the record's images alone: nil when neither image exists (nothing changed).
    public init?(key: TableKey, old: Item?, new: Item?, eventID: String, sequenceNumber: String, committedAt: Int64) {
        let kind: Kind
        switch (old, new) {
        case (nil, nil): return nil
        case (nil, _): kind = .insert
        case (_, nil): kind = .remove
        default: kind = .modify
        }
        self.init(eventID: eventID, sequenceNumber: sequenceNumber, kind: kind, key: key, oldImage: old, newImage: new,
                  committedAt: committedAt)
    }

    /// The change with its images cut to `names`; nil when nothing among them changed (DynamoDB
    /// Streams gives no record for a write that changed nothing, and a change of attributes no
    /// reader keeps is none to them either).
    public func keeping(_ names: Set<String>) -> ItemChange? {
        var change = self
        change.oldImage = oldImage.map { $0.filter { names.contains($0.key) } }
        change.newImage = newImage.map { $0.filter { names.contains($0.key) } }
        if let old = change.oldImage, let new = change.newImage, old == new { return nil }
        return change
    }

    /// The CloudEvents `sequence` extension: the sequence number left-padded to DynamoDB's
    /// maximum of 40 digits, so that strings compare in the stream's order.
    public var orderingKey: String {
        String(repeating: "0", count: max(0, 40 - sequenceNumber.utf8.count)) + sequenceNumber
    }

    /// The same on every delivery of this record: its stream id and the item's key.
    public var derivedEventID: String {
        let text = eventID + "\n" + key.pk + "\n" + key.sk
        return String(SHA256.hexDigest(of: Array(text.utf8)).prefix(32))
    }

    // MARK: - The DynamoDB Streams record shape (as Lambda delivers it)

    public struct MalformedRecord: Error, CustomStringConvertible {
        public let description: String
    }

    /// A record of a Lambda event from a DynamoDB Stream (`{"Records": [...]}`).
    public init(streamRecord record: JSONValue) throws(MalformedRecord) {
        guard let name = record["eventName"]?.stringValue, let kind = Kind(rawValue: name) else {
            throw MalformedRecord(description: "a stream record without an eventName of INSERT, MODIFY or REMOVE")
        }
        guard let dynamodb = record["dynamodb"], let sequence = dynamodb["SequenceNumber"]?.stringValue, !sequence.isEmpty else {
            throw MalformedRecord(description: "a stream record without dynamodb.SequenceNumber")
        }
        func image(_ name: String) throws(MalformedRecord) -> Item? {
            guard let json = dynamodb[name], !json.isNull else { return nil }
            do {
                return try DynamoJSON.decodeItem(json)
            } catch {
                throw MalformedRecord(description: "dynamodb.\(name) is not DynamoDB JSON: \(error)")
            }
        }
        let keys = try image("Keys")
        let old = try image("OldImage"), new = try image("NewImage")
        guard let key = keys.flatMap(TableKey.init(item:)) ?? (new ?? old).flatMap(TableKey.init(item:)) else {
            throw MalformedRecord(description: "a stream record without string PK and SK keys")
        }
        let approximate = dynamodb["ApproximateCreationDateTime"]
        // A number of seconds from Lambda and GetRecords; some emulators send ISO-8601 text.
        let seconds = approximate?.doubleValue
            ?? approximate?.stringValue.flatMap { ISO8601.parse($0) ?? ISO8601.parse($0 + "Z") } ?? 0
        // Seconds by default; a stream created with microsecond precision sends microseconds.
        let milliseconds = seconds > 1e14 ? Int64(seconds / 1000) : Int64((seconds * 1000).rounded())
        let identity = record["userIdentity"]
        let ttl = identity?["type"]?.stringValue == "Service" && identity?["principalId"]?.stringValue == "dynamodb.amazonaws.com"
        self.init(eventID: record["eventID"]?.stringValue ?? sequence, sequenceNumber: sequence, kind: kind, key: key,
                  oldImage: old, newImage: new, committedAt: milliseconds, byTimeToLive: ttl)
    }

    /// The record in DynamoDB Streams' shape, as the local store's change log keeps it.
    public func streamRecord(sourceARN: String) -> JSONValue {
        var dynamodb: [String: JSONValue] = [
            "ApproximateCreationDateTime": .number(String(committedAt / 1000) + "." + String(String(1000 + committedAt % 1000).dropFirst())),
            "Keys": DynamoJSON.encode(key.item),
            "SequenceNumber": .string(sequenceNumber),
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        ]
        if let oldImage { dynamodb["OldImage"] = DynamoJSON.encode(oldImage) }
        if let newImage { dynamodb["NewImage"] = DynamoJSON.encode(newImage) }
        var record: [String: JSONValue] = [
            "eventID": .string(eventID), "eventName": .string(kind.rawValue), "eventVersion": "1.1",
            "eventSource": "aws:dynamodb", "awsRegion": "local", "dynamodb": .object(dynamodb),
            "eventSourceARN": .string(sourceARN),
        ]
        if byTimeToLive { record["userIdentity"] = ["type": "Service", "principalId": "dynamodb.amazonaws.com"] }
        return .object(record)
    }
}
