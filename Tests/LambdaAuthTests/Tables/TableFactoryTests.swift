import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// The product's side of the tables (Sources/LambdaAuth/Tables): which table `AUTH_STORE`
/// opens, and what a configuration missing DynamoDB's settings says.
@Suite struct TableFactoryTests {
    let now: Double = 1_800_000_000

    @Test func configurationOpensTheLocalStore() throws {
        var configuration = try AuthConfiguration.fromEnvironment(["AUTH_STORE": "/tmp/some-store"])
        #expect(try makeTable(configuration, clock: SystemClock()) is LocalTable)
        configuration.store = .dynamoDB(table: "users")
        #expect(throws: AuthError.self) { try makeTable(configuration, clock: SystemClock()) }
    }

    @Test func configurationNamesWhatIsMissing() throws {
        let moto = try MotoServer.shared()
        var environment = moto.environment(table: "configured-table")
        environment["AUTH_SIGNING_KEY"] = AccessTokenKey.generate().pemRepresentation
        environment["AUTH_CREDENTIALS_SECRET"] = "0123456789abcdef"
        let configuration = try AuthConfiguration.fromEnvironment(environment)
        let table = try DynamoDBTable(configuration: configuration, clock: FixedClock(now))
        #expect(table.tableName == "configured-table")
        #expect(table.client.endpoint == moto.endpoint + "/")

        for missing in ["AWS_REGION", "AWS_ACCESS_KEY_ID"] {
            var incomplete = environment
            incomplete[missing] = nil
            do {
                _ = try DynamoDBTable(configuration: try AuthConfiguration.fromEnvironment(incomplete), clock: FixedClock(now))
                Issue.record("\(missing) missing was accepted")
            } catch {
                #expect(error.code == .configError && error.message.contains(missing))
            }
        }
        var regional = environment
        regional["AUTH_DYNAMODB_ENDPOINT"] = nil
        regional["AWS_REGION"] = "eu-west-3"
        #expect(try DynamoDBTable(configuration: AuthConfiguration.fromEnvironment(regional), clock: FixedClock(now)).client.endpoint
                == "https://dynamodb.eu-west-3.amazonaws.com/")
    }
}
