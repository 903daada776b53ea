import ArgumentParser
import LambdaAuth
import LambdaAuthTooling

extension StoreCommands {
    /// `authctl store create-table`: the one DynamoDB set-up step a deployment needs.
    struct CreateTable: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create-table",
            abstract: "Create the AUTH_STORE=dynamodb:TABLE table (PK/SK, GSI1, on-demand, TTL on ttl) at "
                + "AUTH_DYNAMODB_ENDPOINT or AWS; idempotent."
        )

        func run() throws {
            // Creating the table needs no signing key or credentials secret (authctl's configuration
            // does not ask for them).
            let configuration = try AuthCtlContext.current.configuration()
            guard case .dynamoDB = configuration.store else {
                throw CommandFailure("store create-table needs AUTH_STORE=dynamodb:TABLE", exitCode: 2)
            }
            let table = try DynamoDBTable(configuration: configuration, clock: configuration.clock)
            let report = try table.createTable()
            print(report.created
                  ? "created table \(table.tableName) at \(table.client.endpoint) (PK/SK, GSI1, on-demand billing)"
                  : "table \(table.tableName) already exists at \(table.client.endpoint) with the expected keys")
            print(report.enabledTTL ? "enabled TTL on attribute ttl" : "TTL on attribute ttl was already enabled")
        }
    }
}
