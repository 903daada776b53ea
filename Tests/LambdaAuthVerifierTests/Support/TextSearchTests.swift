import LambdaAuthVerifier
import Testing

/// The byte search the handlers use instead of `_StringProcessing`'s must answer as it does.
@Suite struct TextSearchTests {
    static let cases: [(text: String, needle: String)] = [
        ("https://login.example.com/{tenantid}/v2.0", "{tenantid}"), ("https://a", "://"), ("abc", "abcd"), ("", "a"),
        ("aaab", "aab"), ("a-b-c", "-"), ("héllo wörld", "wö"), ("x]:443", "]:"), ("no match here", "zz"), ("ends with", "with"),
    ]

    @Test(arguments: cases)
    func findsWhatTheStandardLibraryFinds(_ text: String, _ needle: String) {
        #expect(text.firstRange(ofText: needle) == text.firstRange(of: needle))
        #expect(text.contains(text: needle) == text.contains(needle))
        #expect(text.replacing(text: needle, with: "_") == text.replacing(needle, with: "_"))
        let tail = text.dropFirst(2)
        #expect(tail.firstRange(ofText: needle) == tail.firstRange(of: needle))
    }

    /// What a handler links searches strings with these: one `_StringProcessing` search on the
    /// start-up path costs every cold start its metadata again (it did, twice).
    @Test func theHandlersSourcesSearchStringsAsBytes() throws {
        var files: [String] = []
        for target in ["LambdaAuth", "LambdaAuthVerifier", "LambdaAuthTables"] {
            files += try TargetBoundaryTests.swiftFiles(under: TargetBoundaryTests.root + "/Sources/" + target)
        }
        #expect(files.count > 100)
        let patterns = [/\.firstRange\(of:/, /\.replacing\((?!text:)/, /\.ranges\(of:/, /\.wholeMatch\(/, /\.trimmingPrefix\(/, /Regex</]
        for file in files {
            let code = String(decoding: try FileSystem.readFile(file), as: UTF8.self).split(separator: "\n")
                .filter { !$0.drop { $0 == " " }.hasPrefix("//") }
            let uses = code.filter { line in patterns.contains { line.contains($0) } }
            #expect(uses.isEmpty, "\(file): \(uses.joined(separator: " | "))")
        }
    }
}
