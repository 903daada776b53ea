import Logging

/// The configured hooks of a process (contract section 19), built once by the handlers that sign
/// in or refresh and kept warm. Each call: the payload signed or SigV4-signed and sent within its
/// timeout, capped by what is left of the invocation; the answer checked; a deny is HOOK_DENIED,
/// an error HOOK_UNAVAILABLE under `onError: "deny"` and nothing under `"allow"`.
struct Hooks: Sendable {
    struct Configured: Sendable {
        let settings: HookSettings
        let client: any HookClient
    }

    let configured: [HookType: Configured]
    /// The payload's `time`: the product clock, as every time the flows write.
    let clock: any WallClock
    let random: any RandomSource

    static let none = Hooks(configured: [:], clock: SystemClock(), random: SystemRandomSource())

    func isConfigured(_ type: HookType) -> Bool { configured[type] != nil }

    /// `beforeUserCreated` or `beforeSignIn`: returns when the hook allows (or is not configured,
    /// or failed under `allow`); throws HOOK_DENIED with its message, or HOOK_UNAVAILABLE.
    func decide(_ payload: HookPayload, request: HookRequest, logger: Logger) throws(AuthError) {
        guard let hook = configured[payload.type] else { return }
        let decision: HookAnswer.Decision
        do {
            decision = try HookAnswer.decision(try call(hook, payload, request: request))
        } catch {
            return try failed(hook, payload.type, error.reason, logger: logger)
        }
        guard case .deny(let message) = decision else { return }
        logger.info("a hook denied the request", metadata: ["hook": .string(payload.type.rawValue)])
        throw AuthError(.hookDenied, message ?? Hooks.defaultDenial(payload.type))
    }

    /// `accessTokenClaims`: the claims to add (none when not configured, or failed under `allow`).
    func claims(_ payload: HookPayload, request: HookRequest, logger: Logger) throws(AuthError) -> [String: JSONValue] {
        guard let hook = configured[.accessTokenClaims] else { return [:] }
        do {
            return try HookAnswer.claims(try call(hook, payload, request: request))
        } catch {
            try failed(hook, .accessTokenClaims, error.reason, logger: logger)
            return [:]
        }
    }

    /// One call, timed into the request's ledger whatever its outcome.
    func call(_ hook: Configured, _ payload: HookPayload, request: HookRequest) throws(HookAnswer.Invalid) -> [UInt8] {
        let id = "hook_" + random.identifier()
        let body = payload.json(id: id, time: clock.nowSeconds, request: request).serializedBytes()
        let startedAt = monotonicSeconds()
        defer { request.ledger.record(payload.type, milliseconds: (monotonicSeconds() - startedAt) * 1000) }
        let timeout: Double
        switch InvocationDeadline.cap(Double(hook.settings.timeoutMilliseconds) / 1000, now: SystemClock().now()) {
        case .exhausted: throw HookAnswer.Invalid(reason: "the invocation has no time left for it")
        case .seconds(let seconds): timeout = seconds
        case .none: timeout = Double(hook.settings.timeoutMilliseconds) / 1000
        }
        do {
            return try hook.client.send(body, id: id, timeout: timeout)
        } catch {
            throw HookAnswer.Invalid(reason: error.reason)
        }
    }

    /// A hook that gave no usable answer: logged with which and why, then its policy decides.
    func failed(_ hook: Configured, _ type: HookType, _ reason: String, logger: Logger) throws(AuthError) {
        logger.warning("a hook failed", metadata: ["hook": .string(type.rawValue), "reason": .string(reason),
                                                   "onError": .string(hook.settings.onError.rawValue)])
        guard hook.settings.onError == .deny else { return }
        throw AuthError(.hookUnavailable, "the app's \(type.rawValue) hook did not answer usefully; try again",
                        detail: "\(type.rawValue): \(reason)")
    }

    static func defaultDenial(_ type: HookType) -> String {
        type == .beforeUserCreated ? "this sign-up is not allowed" : "this sign-in is not allowed"
    }
}

extension Hooks {
    /// The clients of `settings`: URL hooks over `http`, Lambda hooks over SigV4 with the
    /// process's region and credentials. What start-up validation cannot see (no region for a
    /// Lambda hook) is a CONFIG_ERROR here, when a handler that calls hooks is built.
    static func build(_ settings: [HookType: HookSettings], secret: [UInt8]?, lambdaEndpoint: String?, region: String?,
                      credentials: AWSCredentials?, http: any HTTPClient, clock: any WallClock, random: any RandomSource) throws(AuthError) -> Hooks {
        var configured: [HookType: Configured] = [:]
        for (type, hook) in settings {
            let client: any HookClient
            switch hook.target {
            case .url(let url):
                guard let secret else {
                    throw AuthConfiguration.configError("AUTH_HOOK_SECRET", "is required with a url hook in AUTH_HOOKS (\(type.rawValue))")
                }
                client = URLHookClient(url: url, secret: secret, http: http, signingClock: SystemClock())
            case .lambda(let function):
                let (region, credentials) = try AWSEnvironment.require(region: region, credentials: credentials,
                                                                       for: "a lambda hook in AUTH_HOOKS (\(type.rawValue))")
                client = LambdaHookClient(function: function, endpoint: lambdaEndpoint ?? "https://lambda.\(region).amazonaws.com",
                                          signer: SigV4Signer(credentials: credentials, region: region, service: "lambda"),
                                          http: http, signingClock: SystemClock())
            }
            configured[type] = Configured(settings: hook, client: client)
        }
        return Hooks(configured: configured, clock: clock, random: random)
    }
}
