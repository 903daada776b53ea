/// The three handlers the executables run: each builds its flow once per process and answers
/// one request per invocation.
public struct SignInHandler: RequestHandler {
    let flow: SignInFlow
    public init(services: AuthServices) { flow = SignInFlow(services: services) }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try requirePost(request)
        return try flow.handle(RequestBody(request.body), logger: context.logger)
    }
}

public struct RefreshHandler: RequestHandler {
    let flow: RefreshFlow
    public init(services: AuthServices) { flow = RefreshFlow(services: services) }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try requirePost(request)
        return try flow.handle(RequestBody(request.body), logger: context.logger)
    }
}

public struct LinkProviderHandler: RequestHandler {
    let flow: LinkProviderFlow
    public init(services: AuthServices) { flow = LinkProviderFlow(services: services) }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try flow.handle(request, logger: context.logger)
    }
}

func requirePost(_ request: InvocationRequest) throws(AuthError) {
    guard request.method == "POST" else {
        throw AuthError(.invalidRequest, "method \(request.method) is not supported; use POST")
    }
}
