import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// `authctl store ...` as a user runs it: AUTH_STORE honoured, DynamoDB JSON out, non-zero exits
/// with a message on failure.
@Suite struct StoreCommandTests {
    private func authctl(_ store: String, _ arguments: String..., stdin: String = "") throws -> ProcessRunner.Output {
        try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: ["AUTH_STORE": store],
                              stdin: Array(stdin.utf8))
    }

    @Test func putGetQueryDelete() throws {
        let root = TestSupport.temporaryDirectory("authctl-store")
        defer { TestSupport.removeTree(root) }
        let store = root + "/store"
        let item = #"{"PK": {"S": "USER#1"}, "SK": {"S": "REFRESH#a"}, "GSI1PK": {"S": "REFRESH#h"}, "GSI1SK": {"S": "REFRESH"}}"#
        #expect(try authctl(store, "store", "put", item, "--condition", "attribute_not_exists(PK)").exitCode == 0)
        let again = try authctl(store, "store", "put", item, "--condition", "attribute_not_exists(PK)")
        #expect(again.exitCode != 0)
        #expect(again.stderrText.contains("conditional request failed"))

        let got = try authctl(store, "store", "get", "USER#1", "REFRESH#a")
        #expect(got.exitCode == 0)
        #expect(got.json?["Item"]?["GSI1PK"] == ["S": "REFRESH#h"])
        #expect(try authctl(store, "store", "get", "USER#1", "NOPE").exitCode != 0)

        let byIndex = try authctl(store, "store", "query", "REFRESH#h", "--index", "GSI1")
        #expect(byIndex.json?["Count"] == 1)
        let byPrefix = try authctl(store, "store", "query", "USER#1", "--sk-begins-with", "REFRESH#")
        #expect(byPrefix.json?["Items"]?.arrayValue?.first?["SK"] == ["S": "REFRESH#a"])
        #expect(try authctl(store, "store", "scan").json?["Count"] == 1)

        #expect(try authctl(store, "store", "delete", "USER#1", "REFRESH#a").exitCode == 0)
        #expect(try authctl(store, "store", "scan").json?["Count"] == 0)
        let bad = try authctl(store, "store", "put", #"{"PK": {"S": "x"}}"#)
        #expect(bad.exitCode != 0 && bad.stderrText.contains("PK and SK"))
    }

    @Test func exportThenImportRoundTrips() throws {
        let root = TestSupport.temporaryDirectory("authctl-transfer")
        defer { TestSupport.removeTree(root) }
        let table = LocalTable(directory: root + "/source", clock: SystemClock())
        var expected: [String: Item] = [:]
        for index in 0..<120 {
            var item = TableKey(pk: "USER#\(index % 30)", sk: "ITEM#\(index)").item
            item["n"] = .n("\(index).5")
            item["tags"] = .ss(["a\(index)"])
            item["nested"] = .m(["list": .l([.bool(true), .null])])
            try table.putItem(item)
            expected["\(index)"] = item
        }
        let exported = try authctl(root + "/source", "store", "export")
        #expect(exported.exitCode == 0)
        let lines = exported.stdoutText.split(separator: "\n")
        #expect(lines.count == 120)
        #expect(lines.allSatisfy { line in (try? JSONValue.parse(String(line)))?["Item"]?["PK"] != nil })

        let imported = try authctl(root + "/copy", "store", "import", "-", stdin: exported.stdoutText)
        #expect(imported.exitCode == 0, "\(imported.stderrText)")
        let copy = LocalTable(directory: root + "/copy", clock: SystemClock())
        for item in expected.values {
            #expect(try copy.getItem(TableKey(item: item)!) == item)
        }
        let broken = try authctl(root + "/copy", "store", "import", "-", stdin: "{\"Item\": {\"PK\": {\"S\": \"a\"}, \"SK\": {\"S\": \"b\"}}}\n{\"Item\": 1}\n")
        #expect(broken.exitCode != 0 && broken.stderrText.contains("line 2"))
    }
}
