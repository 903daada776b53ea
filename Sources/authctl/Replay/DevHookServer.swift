import LambdaAuth
import LambdaAuthTooling
import Synchronization

/// A replayed scenario's stand-in for the app's hook endpoint (`"hookServer": true`): a URL hook
/// on loopback that checks each call's Standard Webhooks signature (AUTH_HOOK_SECRET, set for
/// every step) and answers as the steps say. `{{hookServer}}` is its URL, for the scenario's
/// AUTH_HOOKS. A step's `hookAnswers` (`{"beforeSignIn": {"decision": "deny", "message": "…"}}`)
/// holds from that step on; a hook never told answers `{"decision": "allow"}`, or `{"claims": {}}`
/// for `accessTokenClaims`. A step's `expect.hookCalls` lists the hooks it called, in order.
final class DevHookServer: Sendable {
    /// Fixed, so that a scenario's runs are alike; a replay's, never a deployment's.
    static let secret = [UInt8](repeating: 0x2A, count: 32)
    static var secretVariable: String { "whsec_" + Base64.encoded(secret) }

    private struct State {
        var answers: [String: JSONValue] = [:]
        var calls: [String] = []
        var unsigned = 0
    }

    /// Shared with the server's responder.
    private final class Box: Sendable {
        let state = Mutex(State())
    }

    private let box: Box
    private let server: LoopbackHTTPServer

    init() throws {
        let box = Box()
        self.box = box
        server = try LoopbackHTTPServer { request in
            let type = (try? JSONValue.parse(request.body))?["type"]?.stringValue ?? "?"
            let expected = StandardWebhookSignature.v1(id: request.headers["webhook-id"] ?? "", timestamp: request.headers["webhook-timestamp"] ?? "",
                                                       body: request.body, secret: DevHookServer.secret)
            let signed = (request.headers["webhook-signature"] ?? "").split(separator: " ").contains { $0 == expected }
            return box.state.withLock { state in
                state.calls.append(type)
                guard signed else {
                    state.unsigned += 1
                    return .json(["error": "the webhook-signature does not verify"], status: 401)
                }
                return .json(state.answers[type] ?? (type == "accessTokenClaims" ? ["claims": [:]] : ["decision": "allow"]))
            }
        }
    }

    var url: String { server.baseURL + "/hooks" }

    func answer(_ answers: [String: JSONValue]) {
        box.state.withLock { $0.answers.merge(answers) { $1 } }
    }

    /// The hooks called since the last take, and how many calls were not signed right.
    func takeCalls() -> (calls: [String], unsigned: Int) {
        box.state.withLock { state in
            defer { (state.calls, state.unsigned) = ([], 0) }
            return (state.calls, state.unsigned)
        }
    }

    func stop() { server.stop() }
}
