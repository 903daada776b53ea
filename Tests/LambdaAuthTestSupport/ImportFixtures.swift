/// Generated exports for `authctl users import`'s kill tests and bench.
public enum ImportFixtures {
    /// A Firebase `auth:export` file of `count` users `<prefix><n>`: Google on each (subject
    /// `9<prefix><n>`), Apple on every third (`apple.<prefix>.<n>`), an email verified on four in five.
    public static func firebaseExport(_ count: Int, prefix: String = "k") -> [UInt8] {
        var bytes = Array("{\"users\": [\n".utf8)
        bytes.reserveCapacity(count * 240)
        for index in 0..<count {
            var providers = #"{"providerId": "google.com", "rawId": "9\#(prefix)\#(index)"}"#
            if index % 3 == 0 { providers += #", {"providerId": "apple.com", "rawId": "apple.\#(prefix).\#(index)"}"# }
            if index > 0 { bytes += Array(",\n".utf8) }
            bytes += Array(#"{"localId": "\#(prefix)\#(index)", "email": "\#(prefix)\#(index)@example.com", "emailVerified": \#(index % 5 != 0), "displayName": "User \#(index)", "createdAt": "1600000000000", "providerUserInfo": [\#(providers)]}"#.utf8)
        }
        bytes += Array("\n]}\n".utf8)
        return bytes
    }
}
