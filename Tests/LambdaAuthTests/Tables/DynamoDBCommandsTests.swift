import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// `authctl store create-table` as a user runs it, against moto_server.
@Suite struct DynamoDBCommandsTests {
    @Test func createTableCreatesOnceThenAcceptsTheExistingTable() throws {
        let moto = try MotoServer.shared()
        let name = "authctl-\(SystemRandomSource().bytes(6).hexString)"
        let authctl = ProcessRunner.executable("authctl")
        let first = try ProcessRunner.run(authctl, arguments: ["store", "create-table"], environment: moto.environment(table: name))
        #expect(first.exitCode == 0, "\(first.stderrText)")
        #expect(first.stdoutText.contains("created table \(name)") && first.stdoutText.contains("enabled TTL"))

        let second = try ProcessRunner.run(authctl, arguments: ["store", "create-table"], environment: moto.environment(table: name))
        #expect(second.exitCode == 0, "\(second.stderrText)")
        #expect(second.stdoutText.contains("already exists") && second.stdoutText.contains("already enabled"))

        // The table is usable through the client, index included.
        let table = DynamoDBTable(tableName: name, client: moto.client(), clock: SystemClock())
        try table.putItem(["PK": .s("USER#a"), "SK": .s("REFRESH#1"), "GSI1PK": .s("REFRESH#h"), "GSI1SK": .s("x")])
        let found = try table.query(QueryRequest(indexName: "GSI1", keyCondition: "GSI1PK = :h",
                                                 attributes: ExpressionAttributes(values: [":h": .s("REFRESH#h")])))
        #expect(found.items.count == 1)
    }

    @Test func createTableExplainsWhatIsMissing() throws {
        let authctl = ProcessRunner.executable("authctl")
        let local = try ProcessRunner.run(authctl, arguments: ["store", "create-table"], environment: ["AUTH_STORE": "/tmp/somewhere"])
        #expect(local.exitCode == 2 && local.stderrText.contains("AUTH_STORE=dynamodb:TABLE"))

        let moto = try MotoServer.shared()
        var noRegion = moto.environment(table: "whatever-table")
        noRegion["AWS_REGION"] = nil
        let missing = try ProcessRunner.run(authctl, arguments: ["store", "create-table"], environment: noRegion)
        #expect(missing.exitCode == 1 && missing.stderrText.contains("CONFIG_ERROR") && missing.stderrText.contains("AWS_REGION"))

        let unreachable = try ProcessRunner.run(authctl, arguments: ["store", "create-table"],
                                                environment: moto.environment(table: "whatever-table").merging(["AUTH_DYNAMODB_ENDPOINT": "http://127.0.0.1:9"]) { $1 })
        #expect(unreachable.exitCode == 1 && unreachable.stderrText.contains("store unavailable") && unreachable.stderrText.contains("after 4 attempts"),
                "\(unreachable.stderrText)")
    }
}
