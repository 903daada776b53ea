/// `authctl hooks test TYPE`: a sample payload sent to the hook `AUTH_HOOKS` configures, exactly
/// as the handlers send it (signed, within its timeout), and its answer checked as theirs is.
public enum HookTest {
    public struct Outcome: Sendable {
        /// The answer's body as text; nil when the hook gave none.
        public var answer: String?
        /// `allow`, `deny: MESSAGE`, `claims: {...}`, or why the answer is not one.
        public var verdict: String
        public var isValid: Bool
    }

    public static func run(_ name: String, configuration: AuthConfiguration, http: any HTTPClient = CurlHTTPClient()) throws(AuthError) -> Outcome {
        guard let type = HookType(rawValue: name) else {
            throw AuthError(.invalidRequest, "\(name) is not a hook (\(HookConfiguration.hookNames))")
        }
        guard let settings = configuration.hooks[type] else {
            throw AuthConfiguration.configError("AUTH_HOOKS", "configures no \(name) hook")
        }
        let hooks = try Hooks.build([type: settings], secret: configuration.hookSecret, lambdaEndpoint: configuration.lambdaEndpoint,
                                    region: configuration.awsRegion, credentials: configuration.awsCredentials, http: http,
                                    clock: configuration.clock, random: SystemRandomSource())
        let body: [UInt8]
        do {
            body = try hooks.call(hooks.configured[type]!, sample(type), request: HookRequest(requestID: "authctl-hooks-test"))
        } catch {
            return Outcome(answer: nil, verdict: error.reason, isValid: false)
        }
        let answer = String(decoding: body, as: UTF8.self)
        do {
            if type == .accessTokenClaims {
                return Outcome(answer: answer, verdict: "claims: " + JSONValue.object(try HookAnswer.claims(body)).serialized(), isValid: true)
            }
            switch try HookAnswer.decision(body) {
            case .allow: return Outcome(answer: answer, verdict: "allow", isValid: true)
            case .deny(let message): return Outcome(answer: answer, verdict: "deny: " + (message ?? Hooks.defaultDenial(type)), isValid: true)
            }
        } catch {
            return Outcome(answer: answer, verdict: error.reason, isValid: false)
        }
    }

    /// A Google sign-in of a sample user, as each hook would see it.
    static func sample(_ type: HookType) -> HookPayload {
        let identity = VerifiedIdentity(provider: .google, subject: "sample-subject", email: "sample@example.com", emailVerified: true,
                                        isPrivateEmail: false, name: "Sample User", picture: nil, claims: [:])
        let user: JSONValue = [
            "id": "sample-user", "email": "sample@example.com", "emailVerified": true, "displayName": "Sample User",
            "identities": [["provider": "google", "subject": "sample-subject", "email": "sample@example.com"]], "appMetadata": [:],
        ]
        return HookPayload(type: type, provider: "google", identity: identity, user: type == .beforeUserCreated ? nil : user,
                           sessionID: type == .accessTokenClaims ? "sample-session" : nil, device: ["platform": "ios"])
    }
}
