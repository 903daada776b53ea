/// The Lambda side of `link-provider`: the event turned into the flow's typed request (the method check and
/// the caller's bearer token live in RequestChecks.swift, once) and the flow's result into the
/// contract's response body. The flows know nothing of events.
public struct LinkProviderHandler: RequestHandler {
    let flow: LinkProviderFlow
    let providers: ProviderRegistry
    init(flow: LinkProviderFlow, providers: ProviderRegistry) {
        self.flow = flow
        self.providers = providers
    }

    enum Action { case link, unlink }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        let body = RequestBody(request.body)
        let action = try LinkProviderHandler.action(of: request, body: body)
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        let user = try caller.attributing { () throws -> UserView in
            switch action {
            case .link:
                let entry = try providers.entry(for: body)
                guard let proven = try entry.prove(body, for: .identity, logger: context.logger) else {
                    throw AuthError(.unsupportedProvider, "provider \(entry.name) proves no identity to link")
                }
                return try flow.link(proven.identity, for: caller, logger: context.logger)
            case .unlink:
                let provider = try providers.identityProvider(named: try body.requiredString("provider", maximumBytes: 64))
                return try flow.unlink(provider, for: caller, logger: context.logger)
            }
        }
        var response = InvocationResponse(body: ["user": user.json])
        // The caller's session is the one acted through; a guest's first identity makes it a user.
        let upgraded = action == .link && caller.user.profile.isGuest && !user.profile.isGuest
        response.event = SecurityEvent(upgraded ? "guest_upgraded" : action == .link ? "identity_linked" : "identity_unlinked",
                                       fields: ["userId": caller.userID, "sessionId": caller.sessionID])
        return response
    }

    /// POST links (or unlinks with `"action": "unlink"`, for direct invocations); DELETE unlinks.
    static func action(of request: InvocationRequest, body: RequestBody) throws(AuthError) -> Action {
        try request.requireMethod("POST", "DELETE", hint: "use POST to link or DELETE to unlink")
        if request.method == "DELETE" { return .unlink }
        switch try body.optionalString("action", maximumBytes: 16) {
        case nil, "link"?: return .link
        case "unlink"?: return .unlink
        default: throw AuthError(.invalidRequest, "action must be link or unlink")
        }
    }
}
