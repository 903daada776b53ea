/// The Lambda side of `refresh`: the event turned into the flow's typed request (the method check and
/// the caller's bearer token live in RequestChecks.swift, once) and the flow's result into the
/// contract's response body. The flows know nothing of events.
public struct RefreshHandler: RequestHandler {
    let flow: RefreshFlow
    init(flow: RefreshFlow) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let presented = try RequestBody(request.body).requiredString("refreshToken", maximumBytes: 1024)
        let result = try flow.refresh(presented, hookRequest: HookRequest(request, context: context), logger: context.logger)
        let session: JSONValue = ["id": .string(result.sessionID), "createdAt": .string(Timestamps.format(result.sessionCreatedAt))]
        return InvocationResponse(body: [
            "user": result.user, "session": session, "tokens": result.tokens.json, "credentials": result.tokens.credentials.json,
        ])
    }
}
