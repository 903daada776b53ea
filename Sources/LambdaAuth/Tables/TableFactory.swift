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
