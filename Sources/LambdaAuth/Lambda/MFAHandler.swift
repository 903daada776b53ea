/// The Lambda side of `mfa` (contract section 21): one POST route, the action in the body.
public struct MFAHandler: RequestHandler {
    let flow: MFAFlow
    init(flow: MFAFlow) { self.flow = flow }

    enum Action: String {
        case totpEnroll = "totp-enroll", totpConfirm = "totp-confirm", challenge, stepUp = "step-up", status
        case recoveryCodes = "recovery-codes", totpRemove = "totp-remove"
    }

    public func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        try request.requireMethod("POST")
        let body = RequestBody(request.body)
        let name = try body.requiredString("action", maximumBytes: 32)
        // Off is off for every action, before any caller check.
        try flow.requireEnabled()
        guard let action = Action(rawValue: name) else {
            throw AuthError(.invalidRequest, "action must be totp-enroll, totp-confirm, challenge, step-up, status, recovery-codes or totp-remove")
        }
        if action == .challenge { return try challenge(body, invocation: request, context: context) }
        let caller = try flow.authenticate(try request.callerToken(), logger: context.logger)
        let logger = context.logger
        var eventFields = ["userId": caller.userID, "sessionId": caller.sessionID]
        let answer = try caller.attributing { () throws -> JSONValue in
            switch action {
            case .totpEnroll:
                let enrolment = try flow.enroll(for: caller, logger: logger)
                return ["secret": .string(enrolment.secret), "uri": .string(enrolment.uri)]
            case .totpConfirm:
                let codes = try flow.confirm(code: try body.requiredString("code", maximumBytes: 16), for: caller, logger: logger)
                return ["recoveryCodes": .array(codes.map(JSONValue.string))]
            case .stepUp:
                let proof = try SecondFactorProof(body)
                let raised = try flow.stepUp(proof, for: caller, hookRequest: HookRequest(request, context: context), logger: logger)
                eventFields["factor"] = proof.kind
                eventFields["amr"] = raised.assurance.methods.joined(separator: " ")
                return ["session": ["id": .string(raised.sessionID)],
                        "tokens": ["accessToken": .string(raised.accessToken), "tokenType": "Bearer", "expiresIn": .number(raised.lifetime)]]
            case .status:
                let status = flow.status(for: caller)
                return ["totp": .bool(status.totp), "recoveryCodesLeft": .number(Int64(status.recoveryCodesLeft))]
            case .recoveryCodes:
                return ["recoveryCodes": .array(try flow.newRecoveryCodes(for: caller, logger: logger).map(JSONValue.string))]
            case .totpRemove:
                try flow.remove(for: caller, logger: logger)
                return ["removed": true]
            case .challenge: throw AuthError.internalError("challenge is answered without a caller")
            }
        }
        var response = InvocationResponse(body: answer)
        response.event = SecurityEvent(SecurityEvent.successName(handler: "mfa", request: request, answer: answer), fields: eventFields)
        return response
    }

    /// The sign-in response, as `signin` answers; its event line is a `signin` with `amr`.
    func challenge(_ body: RequestBody, invocation: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        let request = MFAFlow.ChallengeRequest(
            mfaToken: try body.requiredString("mfaToken", maximumBytes: 256), proof: try SecondFactorProof(body),
            device: try SignInRequest.device(body), provider: try body.optionalString("provider", maximumBytes: 64),
            hookRequest: HookRequest(invocation, context: context))
        let (result, assurance) = try flow.challenge(request, logger: context.logger)
        var response = InvocationResponse(body: [
            "user": result.user.json, "isNewUser": .bool(result.isNewUser), "session": result.session.json,
            "tokens": result.tokens.json, "credentials": result.tokens.credentials.json,
        ])
        response.event = SecurityEvent("signin", fields: [
            "userId": result.user.profile.userID, "sessionId": result.session.sessionID, "factor": request.proof.kind,
            "provider": assurance.methods.first ?? "", "amr": assurance.methods.joined(separator: " "),
        ])
        return response
    }
}
