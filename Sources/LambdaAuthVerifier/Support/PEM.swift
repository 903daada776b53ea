import Crypto

/// PEM text read as bytes. swift-crypto's PEM reader joins the lines through a generic String API
/// whose first use cost every new process some 200,000 instructions of runtime type look-ups
/// (callgrind), a sixth of its start-up.
package enum PEM {
    /// A P-256 private key in SEC 1 (`EC PRIVATE KEY`) or PKCS#8 (`PRIVATE KEY`) form, one block
    /// whose END line names what its BEGIN line named (RFC 7468); nil for anything else.
    package static func p256PrivateKey(_ block: String) -> P256.Signing.PrivateKey? {
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "\r") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var lines = Array(block.utf8).split(separator: UInt8(ascii: "\n")).map { line in
            line[..<(line.lastIndex { !isSpace($0) }.map { $0 + 1 } ?? line.startIndex)]
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard lines.count >= 2, let begin = lines.first, let end = lines.last, begin.starts(with: Array("-----BEGIN ".utf8)),
              end.elementsEqual(Array("-----END ".utf8) + begin.dropFirst("-----BEGIN ".utf8.count)),
              let der = Base64.decode(Array(lines.dropFirst().dropLast().joined()), table: Base64.standardTable, padded: true) else {
            return nil
        }
        return try? P256.Signing.PrivateKey(derRepresentation: der)
    }
}
