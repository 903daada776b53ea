import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// Moving a store between backends with authctl: local → DynamoDB (moto) → local, nothing lost.
@Suite struct StoreMigrationTests {
    @Test func exportAndImportMoveAStoreIntoDynamoDBAndBack() throws {
        let world = FlowWorld()
        world.signIn(token: world.googleToken(subject: "migrating-user", email: "migrate@example.com"))
        let moto = try MotoServer.shared()
        let dynamo = try moto.makeTable(prefix: "migration")
        let directory = TestSupport.temporaryDirectory("migration")
        defer { TestSupport.removeTree(directory) }

        func authctl(_ arguments: [String], _ environment: [String: String]) throws -> ProcessRunner.Output {
            try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: arguments, environment: environment)
        }
        let local = ["AUTH_STORE": world.storeDirectory]
        let exported = try authctl(["store", "export", directory + "/local.jsonl"], local)
        #expect(exported.exitCode == 0, "\(exported.stderrText)")
        let intoDynamo = try authctl(["store", "import", directory + "/local.jsonl"], moto.environment(table: dynamo.tableName))
        #expect(intoDynamo.exitCode == 0, "\(intoDynamo.stderrText)")
        let back = try authctl(["store", "export", directory + "/dynamo.jsonl"], moto.environment(table: dynamo.tableName))
        #expect(back.exitCode == 0, "\(back.stderrText)")
        let copy = ["AUTH_STORE": directory + "/copy"]
        #expect(try authctl(["store", "import", directory + "/dynamo.jsonl"], copy).exitCode == 0)
        let final = try authctl(["store", "export", directory + "/copy.jsonl"], copy)
        #expect(final.exitCode == 0)

        func lines(_ name: String) throws -> Set<String> {
            Set(String(decoding: try FileSystem.readFile(directory + "/" + name), as: UTF8.self).split(separator: "\n").map(String.init))
        }
        let original = try lines("local.jsonl")
        #expect(original.count >= 6, "the signed-in user's items")
        #expect(try lines("dynamo.jsonl") == original)
        #expect(try lines("copy.jsonl") == original)
    }
}
