/// The product's side of the tables (the `LambdaAuthTables` target knows nothing of the product):
/// which store `AUTH_STORE` names, the key spellings the local store must know (from `Keys`),
/// and DynamoDB reached through the product's AWS client. Their failures become the contract's
/// errors where the account layer meets them (`TableError.authError`, Accounts/Table+Accounts.swift).

/// Opens the table the configuration names (`AUTH_STORE`). Cheap: nothing is read until the first
/// operation, so every Lambda invocation may open it afresh.
public func makeTable(_ configuration: AuthConfiguration, clock: any WallClock) throws(AuthError) -> any Table {
    switch configuration.store {
    case .local(let directory):
        return LocalTable(directory: directory, clock: clock)
    case .dynamoDB:
        return try DynamoDBTable(configuration: configuration, clock: clock)
    }
}

extension LocalStoreSchema {
    /// The single-table layout's (contract section 6): GSI1 finds refresh tokens by their hash;
    /// sessions and refresh tokens, which grow with every sign-in, are segments. The change log
    /// is the local store's DynamoDB Stream (contract section 22).
    public static let lambdaAuth = LocalStoreSchema(indexName: Keys.tokenHashIndex,
                                                    segmentPrefixes: [Keys.refreshTokenPrefix, Keys.sessionPrefix],
                                                    changeLog: .lambdaAuth)
}

extension ChangeLogFilter {
    /// The change log keeps what events read (`ItemEvents.readAttributes(of:)`) and nothing else,
    /// so no secret is copied into it; an account is a user's `PROFILE`, and an erasure takes
    /// every record of the user's partition and every record naming the user's id (contract
    /// section 13).
    static let lambdaAuth = ChangeLogFilter(keptAttributes: { ItemEvents.readAttributes(of: $0) },
                                            accountSortKey: Keys.profile,
                                            accountID: { Keys.userID(partition: $0) })
}

extension LocalTable {
    /// The local store of the product's layout.
    public convenience init(directory: String, clock: any WallClock) {
        self.init(directory: directory, clock: clock, schema: .lambdaAuth)
    }

    /// `auth-bench`'s store of the product's layout without change records.
    package static func withoutChangeRecords(directory: String, clock: any WallClock) -> LocalTable {
        withoutChangeRecords(directory: directory, clock: clock, schema: .lambdaAuth)
    }
}

extension DynamoDBTable {
    /// One HTTP client per process: a resident Lambda process reuses its connection to DynamoDB
    /// across invocations even when the table value is rebuilt for each one.
    static let sharedHTTPClient = CurlHTTPClient()

    /// The table `AUTH_STORE=dynamodb:TABLE` names, at `AUTH_DYNAMODB_ENDPOINT` or AWS's regional
    /// endpoint, signed with the `AWS_*` credentials.
    public init(configuration: AuthConfiguration, clock: any WallClock, random: any RandomSource = SystemRandomSource(),
                sleeper: any Sleeper = SystemSleeper(), http: (any HTTPClient)? = nil) throws(AuthError) {
        guard case .dynamoDB(let table) = configuration.store else {
            throw AuthError(.configError, "AUTH_STORE must be dynamodb:TABLE for the DynamoDB client")
        }
        let (region, credentials) = try AWSEnvironment.require(configuration, for: "AUTH_STORE=dynamodb:")
        let endpoint = configuration.dynamoDBEndpoint ?? "https://dynamodb.\(region).amazonaws.com"
        let client = DynamoDBClient(endpoint: endpoint, region: region, credentials: credentials,
                                    http: http ?? DynamoDBTable.sharedHTTPClient, random: random, sleeper: sleeper)
        self.init(tableName: table, client: client, clock: clock)
    }
}
