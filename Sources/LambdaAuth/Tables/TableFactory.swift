/// Opens the table the configuration names (`AUTH_STORE`). Cheap: nothing is read until the first
/// operation, so every Lambda invocation may open it afresh.
public func makeTable(_ configuration: AuthConfiguration, clock: any Clock) throws(AuthError) -> any Table {
    switch configuration.store {
    case .local(let directory):
        return LocalTable(directory: directory, clock: clock)
    case .dynamoDB(let table):
        throw AuthError(.configError, "AUTH_STORE=dynamodb:\(table): the DynamoDB client is not built in this version")
    }
}
