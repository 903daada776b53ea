import LambdaAuth
import LambdaAuthTooling

/// Where a replayed scenario's handlers keep their data: a fresh local store, or a fresh table on
/// a DynamoDB endpoint (moto_server in `make test`) with credentials from that endpoint's STS.
enum ReplayBackend {
    case local
    case dynamoDB(endpoint: String)

    static let stsRoleARN = "arn:aws:iam::123456789012:role/lambda-auth-replay"
    static let userBucket = "lambda-auth-replay-users"

    /// From `--backend local|dynamodb` and `--endpoint URL` (required with dynamodb: replays never
    /// reach AWS itself).
    init(name: String?, endpoint: String?) throws {
        switch name ?? "local" {
        case "local":
            guard endpoint == nil else { throw CommandFailure("--endpoint goes with --backend dynamodb", exitCode: 2) }
            self = .local
        case "dynamodb":
            guard let endpoint, endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://") else {
                throw CommandFailure("--backend dynamodb needs --endpoint URL (a moto_server or DynamoDB Local)", exitCode: 2)
            }
            self = .dynamoDB(endpoint: endpoint)
        case let other:
            throw CommandFailure("--backend must be local or dynamodb, not \(other)", exitCode: 2)
        }
    }

    /// The variables that point one scenario's handlers at its own store, creating that store's
    /// table first when it is a DynamoDB one. `inherited` supplies `AWS_*` values when set.
    func storeEnvironment(world: String, inherited: [String: String]) throws -> [String: String] {
        guard case .dynamoDB(let endpoint) = self else { return ["AUTH_STORE": world + "/store"] }
        let region = inherited["AWS_REGION"] ?? "us-east-1"
        let credentials = AWSCredentials(accessKeyID: inherited["AWS_ACCESS_KEY_ID"] ?? "testing",
                                         secretAccessKey: inherited["AWS_SECRET_ACCESS_KEY"] ?? "testing")
        let name = "replay-" + SystemRandomSource().bytes(8).hexString
        let client = DynamoDBClient(endpoint: endpoint, region: region, credentials: credentials, http: CurlHTTPClient())
        do {
            _ = try DynamoDBTable(tableName: name, client: client, clock: SystemClock()).createTable()
        } catch {
            throw CommandFailure("cannot create table \(name) on \(endpoint): \(error)")
        }
        return ["AUTH_STORE": "dynamodb:" + name, "AUTH_DYNAMODB_ENDPOINT": endpoint, "AUTH_CREDENTIALS": "sts",
                "AUTH_STS_ENDPOINT": endpoint, "AUTH_STS_ROLE_ARN": ReplayBackend.stsRoleARN,
                "AUTH_USER_BUCKET": ReplayBackend.userBucket, "AWS_REGION": region,
                "AWS_ACCESS_KEY_ID": credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": credentials.secretAccessKey,
                "AUTH_SIGNING_KEY": AccessTokenKey.generate().pemRepresentation]
    }
}
