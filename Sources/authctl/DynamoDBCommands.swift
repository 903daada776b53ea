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
            // Creating the table needs no signing key or credentials secret; the configuration
            // insists on both for dynamodb: stores, so stand-ins satisfy it here and go unused.
            var environment = AuthCtlContext.current.environment
            if environment["AUTH_SIGNING_KEY", default: ""].isEmpty && environment["AUTH_SIGNING_KEY_FILE", default: ""].isEmpty {
                environment["AUTH_SIGNING_KEY"] = "unused by store create-table"
            }
            if environment["AUTH_CREDENTIALS_SECRET", default: ""].isEmpty {
                environment["AUTH_CREDENTIALS_SECRET"] = "unused by store create-table"
            }
            let configuration = try AuthConfiguration.fromEnvironment(environment)
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
