import LambdaAuth
import LambdaAuthTooling

extension LoopbackHTTPServer.Response {
    /// An error answer as DynamoDB writes it (`__type` with its namespace, `message`, and what
    /// some errors carry besides, such as `CancellationReasons`), for the fault tests of the
    /// client and of the flows.
    public static func dynamoDBError(_ type: String, status: Int = 400, message: String = "injected",
                                     extra: [String: JSONValue] = [:]) -> LoopbackHTTPServer.Response {
        var body: [String: JSONValue] = ["__type": .string("com.amazonaws.dynamodb.v20120810#\(type)"), "message": .string(message)]
        body.merge(extra) { $1 }
        return .json(.object(body), status: status, headers: [("Content-Type", "application/x-amz-json-1.0")])
    }
}
