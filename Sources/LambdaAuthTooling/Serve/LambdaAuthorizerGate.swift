import LambdaAuth
import Logging

/// Which authorizer serve puts in front of the routes the template guards: the template's
/// `Authorizer` parameter (contract section 20).
public enum ServeAuthorizer: String, Sendable, CaseIterable {
    /// API Gateway's JWT authorizer (`GatewayAuthorizer`): signature and claims only.
    case jwt
    /// Our `authorizer` function, invoked as API Gateway invokes a Lambda authorizer (payload 2.0,
    /// simple responses, no result cache): a revoked session is refused within 5 s.
    case lambda
}

/// The `lambda` mode: each guarded request becomes the HTTP API's authorizer event and goes
/// through the `authorizer` handler by the same invocation path as the zips run.
struct LambdaAuthorizerGate: Sendable {
    let handler: Result<any RequestHandler, AuthError>
    let testMode: Bool

    /// The authorizer's table reads so far (its revocation list's): none per request.
    var tableReads: Int { ((try? handler.get()) as? AuthorizerHandler)?.revocations.reads ?? 0 }

    init(services: AuthServices, testMode: Bool) {
        handler = Result { () throws(AuthError) in try HandlerCatalogue.authorizer.compose(services) }
        self.testMode = testMode
    }

    enum Outcome {
        /// The simple response's `context`, which reaches the function as `requestContext.authorizer.lambda`.
        case allowed([String: JSONValue])
        /// What API Gateway answers instead of invoking the route's function.
        case refused(ServeListener.Response)
    }

    func authorize(_ request: ServeListener.Request, route: HTTPRoute, requestID: String, epochMilliseconds: Int64,
                   logger: Logger) -> Outcome {
        let authorization = request.headers.last { $0.name.lowercased() == "authorization" }?.value
        // The identity source missing: API Gateway answers 401 without invoking the authorizer.
        guard let authorization, !authorization.isEmpty else { return .refused(ServeListener.message(401, "Unauthorized")) }
        let event = LambdaAuthorizerGate.event(request, route: route, requestID: requestID, authorization: authorization,
                                               epochMilliseconds: epochMilliseconds)
        let context = InvocationContext(requestID: requestID, logger: logger)
        guard case .success(let invocation) = EventCodec.decode(event.serializedBytes()).request,
              let response = try? HandlerMain.respond(to: invocation, context: context, testMode: testMode, handler: { try handler.get() }),
              response.status == 200 else {
            return .refused(ServeListener.message(500, "Internal Server Error"))
        }
        guard response.body["isAuthorized"]?.boolValue == true else { return .refused(ServeListener.message(403, "Forbidden")) }
        return .allowed(response.body["context"]?.objectValue ?? [:])
    }

    /// The route's event as API Gateway passes a Lambda authorizer's simple-response context.
    static func withContext(_ event: JSONValue, _ authorizerContext: [String: JSONValue]) -> JSONValue {
        guard case .object(var fields) = event, case .object(var requestContext)? = fields["requestContext"] else { return event }
        requestContext["authorizer"] = ["lambda": .object(authorizerContext)]
        fields["requestContext"] = .object(requestContext)
        return .object(fields)
    }

    /// The HTTP API's authorizer event, payload 2.0 (AWS, "Working with AWS Lambda authorizers for
    /// HTTP APIs"): the request's own event less its body, plus `type`, `routeArn` and `identitySource`.
    static func event(_ request: ServeListener.Request, route: HTTPRoute, requestID: String, authorization: String,
                      epochMilliseconds: Int64) -> JSONValue {
        guard case .object(var fields) = GatewayEvent.make(request, route: route, requestID: requestID, claims: nil,
                                                           epochMilliseconds: epochMilliseconds) else { return .null }
        fields["body"] = nil
        fields["isBase64Encoded"] = nil
        fields["type"] = "REQUEST"
        fields["routeArn"] = .string("arn:aws:execute-api:us-east-1:123456789012:local/$default/\(route.method)\(route.path)")
        fields["identitySource"] = [.string(authorization)]
        return .object(fields)
    }
}
