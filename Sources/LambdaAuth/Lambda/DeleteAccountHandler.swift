/// The Lambda side of `delete-account` (contract section 7).
public struct DeleteAccountHandler: RequestHandler {
    let flow: DeleteAccountFlow
    let testMode: Bool
    let providers: ProviderRegistry
    init(flow: DeleteAccountFlow, providers: ProviderRegistry, testMode: Bool) {
        self.flow = flow
        self.providers = providers
        self.testMode = testMode
    }

    /// The fields that carry a proof of identity; a request with none of them presents no proof.
    static let proofFields = ["idToken", "code", "credential"]

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST", "DELETE", hint: "use POST or DELETE")
        let body = RequestBody(request.body)
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        return try caller.attributing {
            var proof: ProvenIdentity?
            let presented = Self.proofFields.contains { body.fields[$0].map { $0 != .string("") && $0 != .null } ?? false }
            if presented {
                // The proof's own provider checks it: an ID token, an email-only user's fresh code.
                proof = try providers.entry(for: body).prove(body, for: .identity, logger: context.logger)
            }
            let interrupt = testMode && request.body["_testFault"] == "interrupt-deletion"
            let userID = try flow.delete(for: caller, proof: proof, interruptAfterMark: interrupt, logger: context.logger)
            return InvocationResponse(body: ["deleted": true, "userId": .string(userID)])
        }
    }
}
