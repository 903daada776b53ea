/// What a user presents as the second factor: a TOTP code or one of the recovery codes.
enum SecondFactorProof: Sendable {
    case code(String)
    case recoveryCode(String)

    /// Exactly one of `code` and `recoveryCode`.
    init(_ body: RequestBody) throws(AuthError) {
        let code = try body.optionalString("code", maximumBytes: 16)
        let recovery = try body.optionalString("recoveryCode", maximumBytes: 32)
        switch (code, recovery) {
        case (let code?, nil):
            try TOTP.validate(code)
            self = .code(code)
        case (nil, let recovery?):
            guard let normalized = RecoveryCodes.normalized(recovery) else {
                throw AuthError(.invalidRequest, "recoveryCode must be \(RecoveryCodes.length) characters of a-z and 2-7")
            }
            self = .recoveryCode(normalized)
        default:
            throw AuthError(.invalidRequest, "give code or recoveryCode (one of them)")
        }
    }

    /// The event lines' and logs' name of the factor used.
    var kind: String {
        switch self {
        case .code: return "totp"
        case .recoveryCode: return "recovery"
        }
    }
}

/// What a right code uses up, in the transaction that grants what it proves: a TOTP step (no
/// step signs in twice) or a recovery code.
enum SecondFactorUse: Sendable {
    case step(Int64)
    case recoveryCode(hash: String)

    /// The factor's conditional write: the step only if newer than every step used, the code
    /// only while it is still there; either fails if the factor was removed or replaced.
    func write(userID: String) -> TransactWriteAction {
        let key = Keys.secondFactor(userID)
        switch self {
        case .step(let step):
            return .update(key: key, update: "SET lastUsedStep = :step",
                           condition: "#status = :active AND lastUsedStep < :step",
                           attributes: ExpressionAttributes(names: ["#status": "status"],
                                                            values: [":step": .n(step), ":active": .s(SecondFactorRecord.Status.active.rawValue)]))
        case .recoveryCode(let hash):
            return .update(key: key, update: "REMOVE recoveryCodes.#code",
                           condition: "#status = :active AND attribute_exists(recoveryCodes.#code)",
                           attributes: ExpressionAttributes(names: ["#status": "status", "#code": hash],
                                                            values: [":active": .s(SecondFactorRecord.Status.active.rawValue)]))
        }
    }
}
