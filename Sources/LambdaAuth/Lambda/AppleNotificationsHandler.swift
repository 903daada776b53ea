/// `apple-notifications`: `{"payload": "<JWT>"}` → `{"handled": "<type>"}` (contract section 8).
public struct AppleNotificationsHandler: RequestHandler {
    let flow: AppleNotificationFlow
    init(flow: AppleNotificationFlow) { self.flow = flow }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let payload = try RequestBody(request.body).requiredString("payload", maximumBytes: 16 << 10)
        return InvocationResponse(body: ["handled": .string(try flow.handle(payload: payload, logger: context.logger))])
    }
}
