/// Substring search over UTF-8 bytes, for the handlers' own code.
///
/// Why not the standard library's: `contains(_:)`, `firstRange(of:)` and `replacing(_:with:)`
/// for strings come from `_StringProcessing`, whose first call in a process builds generic
/// metadata by mangled name and checks its conformances by scanning the binary's: some 300,000
/// instructions (callgrind), a fifth of a handler's start-up when the configuration asked
/// whether an issuer holds `{tenantid}`. These search the bytes and build nothing.
extension Substring {
    /// The first place `needle` occurs, as indices of this substring's string.
    public func firstRange(ofText needle: String) -> Range<String.Index>? {
        var needle = needle, haystack = self
        let offsets = needle.withUTF8 { needleBytes in
            haystack.withUTF8 { bytes in TextSearch.firstOffsets(of: needleBytes, in: bytes) }
        }
        guard let offsets else { return nil }
        let start = utf8.index(utf8.startIndex, offsetBy: offsets.lowerBound)
        return start..<utf8.index(start, offsetBy: offsets.count)
    }

    public func contains(text needle: String) -> Bool { firstRange(ofText: needle) != nil }
}

extension String {
    public func firstRange(ofText needle: String) -> Range<String.Index>? { self[...].firstRange(ofText: needle) }

    public func contains(text needle: String) -> Bool { self[...].firstRange(ofText: needle) != nil }

    /// Every occurrence of `target` (not empty) replaced, left to right.
    public func replacing(text target: String, with replacement: String) -> String {
        precondition(!target.isEmpty, "replacing an empty string")
        // `append(contentsOf:)` with a Substring, not `+=`: that is the generic Sequence one,
        // with its own metadata to build.
        var result = "", rest = self[...]
        while let found = rest.firstRange(ofText: target) {
            result.append(contentsOf: rest[..<found.lowerBound])
            result.append(replacement)
            rest = rest[found.upperBound...]
        }
        result.append(contentsOf: rest)
        return result
    }
}

enum TextSearch {
    static func firstOffsets(of needle: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard let first = needle.first else { return 0..<0 }
        guard bytes.count >= needle.count else { return nil }
        var index = 0
        while index <= bytes.count - needle.count {
            if bytes[index] == first {
                var matched = 1
                while matched < needle.count, bytes[index + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return index..<(index + needle.count) }
            }
            index += 1
        }
        return nil
    }
}
