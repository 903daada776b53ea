import LambdaAuthVerifier
import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// Where each piece of the local store lives on disk (see LocalTable for the design).
struct StoreLayout {
    let root: String
    /// Sort-key families kept apart from the rest of their partition, each in a file of its own
    /// (`LocalStoreSchema.segmentPrefixes`).
    let segmentPrefixes: [String]

    var lockPath: String { root + "/LOCK" }
    var walPath: String { root + "/wal" }
    var itemsRoot: String { root + "/items" }
    var indexRoot: String { root + "/gsi1" }

    /// 4,096 shard directories keep every directory small (about 75 files at 100,000 users), so
    /// a lookup costs the same at any table size.
    static func shard(_ partitionKey: String) -> String {
        String(Array(SHA256.hash(data: Array(partitionKey.utf8)).bytes.prefix(2)).hexString.prefix(3))
    }

    static let shardCount = 4096

    static func shardName(_ index: Int) -> String {
        String([UInt8(index >> 4), UInt8((index & 0x0F) << 4)].hexString.prefix(3))
    }

    /// A key as a readable, reversible file name: letters, digits and `#-_@=+,` stay, every other
    /// byte becomes %XX (a leading dot too, so no name is hidden or special). Names too long for
    /// the file system fall back to `~<sha256>`; the file inside still carries the real key.
    static func escape(_ component: String) -> String {
        var output: [UInt8] = []
        let digits = Array("0123456789ABCDEF".utf8)
        for (offset, byte) in component.utf8.enumerated() {
            let plain = (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                || Array("#-_@=+,".utf8).contains(byte) || (byte == UInt8(ascii: ".") && offset > 0)
            if plain {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        if output.isEmpty || output.count > 180 { return "~" + SHA256.hexDigest(of: Array(component.utf8)) }
        return String(decoding: output, as: UTF8.self)
    }

    /// One file per partition: `{"Items": [...]}` in sort-key order, without the items of its
    /// segments (see `segmentPrefixes`) once it has been checkpointed with them.
    func partitionPath(_ partitionKey: String) -> String {
        "\(itemsRoot)/\(StoreLayout.shard(partitionKey))/\(StoreLayout.escape(partitionKey)).json"
    }

    /// The segment a sort key belongs to (one of `segmentPrefixes`), or nil: the partition file.
    func segment(ofSortKey sortKey: String) -> String? {
        segmentPrefixes.first { sortKey.utf8.starts(with: $0.utf8) }
    }

    /// `<partition file name>~<family>.json` (`~` never appears in an escaped name but as the
    /// first character of a hashed one, so no partition's file name is another's segment's).
    func segmentPath(_ partitionKey: String, _ prefix: String) -> String {
        "\(itemsRoot)/\(StoreLayout.shard(partitionKey))/\(StoreLayout.escape(partitionKey))~\(StoreLayout.escape(String(prefix.dropLast()))).json"
    }

    /// The segment prefix a file name in a shard directory names, or nil for a partition's file.
    func segmentPrefix(ofFileName name: String) -> String? {
        let stem = name.utf8.dropLast(".json".utf8.count)
        guard let separator = stem.lastIndex(of: UInt8(ascii: "~")), separator != stem.startIndex else { return nil }
        let family = String(decoding: stem[stem.index(after: separator)...], as: UTF8.self)
        return segmentPrefixes.first { StoreLayout.escape(String($0.dropLast())) == family }
    }

    /// One file per GSI1PK value: `{"Keys": [{"PK": ..., "SK": ...}, ...]}`.
    func indexPath(_ indexPartitionKey: String) -> String {
        "\(indexRoot)/\(StoreLayout.shard(indexPartitionKey))/\(StoreLayout.escape(indexPartitionKey)).json"
    }
}

/// The GSI1 entry of an item: DynamoDB indexes an item only when it has both index key attributes
/// as strings.
struct IndexEntry: Equatable {
    var partitionKey: String
    var sortKey: String

    init?(_ item: Item?) {
        guard let item, case .s(let partition)? = item["GSI1PK"], case .s(let sort)? = item["GSI1SK"] else { return nil }
        partitionKey = partition
        sortKey = sort
    }
}

extension Item {
    /// Past its `ttl` (epoch seconds): invisible to reads and conditions.
    func isExpired(now: Double) -> Bool {
        expiry.map { $0 < now } ?? false
    }

    /// Its `ttl` (epoch seconds), when it has one.
    var expiry: Double? { Item.expiry(ttl: self["ttl"]) }

    static func expiry(ttl: AttributeValue?) -> Double? {
        guard case .n(let text)? = ttl else { return nil }
        return Double(text)
    }
}
