/// RFC 3986 percent-encoding of UTF-8 bytes: only the unreserved `A-Z a-z 0-9 - _ . ~` (and `/`
/// when asked) stay as they are, every other byte is `%XX` with uppercase hex digits. This is
/// exactly SigV4's UriEncode, and a valid application/x-www-form-urlencoded serialisation, so the
/// AWS calls and Apple's token endpoint share it.
public enum PercentEncoding {
    public static func encode<Text: StringProtocol>(_ text: Text, keepingSlashes: Bool = false) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepingSlashes && byte == UInt8(ascii: "/")) {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `name=value&…`, both sides encoded: a form body, or a query string as SigV4 signs it.
    public static func form(_ pairs: [(name: String, value: String)]) -> String {
        pairs.map { "\(encode($0.name))=\(encode($0.value))" }.joined(separator: "&")
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        byte.isASCIIAlphanumeric(or: "-_.~")
    }
}
