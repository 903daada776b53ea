/// Strings compared the way DynamoDB compares them: by their UTF-8 bytes. Swift's `String ==`
/// (and its hashing) is canonical equivalence, so `"\u{E9}"` and `"e\u{301}"` are equal to it;
/// two subjects that DynamoDB keeps apart would be one key in memory and two file names on disk.
/// Everything the local store keys by a caller's string goes through these.
extension String {
    package func sameBytes(as other: String) -> Bool {
        var left = self, right = other
        return left.withUTF8 { a in right.withUTF8 { b in a.elementsEqual(b) } }
    }

    func hashBytes(into hasher: inout Hasher) {
        var copy = self
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(utf8.count)
    }
}

/// A dictionary or set key that is its string's UTF-8 bytes.
struct ExactString: Hashable, Sendable {
    let value: String

    init(_ value: String) { self.value = value }

    static func == (lhs: ExactString, rhs: ExactString) -> Bool { lhs.value.sameBytes(as: rhs.value) }
    func hash(into hasher: inout Hasher) { value.hashBytes(into: &hasher) }
}
