import Synchronization

/// An item given whole, or as its DynamoDB JSON in a file or log record, parsed the first time it
/// is used and then kept: a whole process looks at few of a partition file's items (a family's
/// two tokens among a day's hundreds), a resident one at the same items invocation after
/// invocation.
final class LazyItem: Sendable {
    /// The item's text as read (empty when given whole).
    let text: ArraySlice<UInt8>
    /// Where the text came from, for the error a damaged one gives.
    private let source: String
    private let parsed: Mutex<Item?>

    init(_ item: Item) {
        text = []
        source = ""
        parsed = Mutex(item)
    }

    init(text: ArraySlice<UInt8>, source: String) {
        self.text = text
        self.source = source
        parsed = Mutex(nil)
    }

    private init(text: ArraySlice<UInt8>, parsed item: Item) {
        self.text = text
        source = ""
        parsed = Mutex(item)
    }

    /// This item, with its text made when it was given whole (each `withText` of such an item
    /// encodes it again: call it once, where the text is kept).
    func withText() -> LazyItem {
        guard text.isEmpty, let item = parsed.withLock({ $0 }) else { return self }
        return LazyItem(text: DynamoJSON.encodedBytes(item)[...], parsed: item)
    }

    func item() throws(TableError) -> Item {
        if let item = parsed.withLock({ $0 }) { return item }
        let item: Item
        do {
            item = try DynamoJSON.item(Array(text))
        } catch {
            throw .corrupted("\(source): an unreadable item: \(error)")
        }
        parsed.withLock { $0 = item }
        return item
    }
}
