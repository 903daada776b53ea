import LambdaAuth
import LambdaAuthTooling

/// The app's side of hooks (Tests/Scripts/hook_peer.py) on 127.0.0.1: a URL hook verified by the
/// `standardwebhooks` package and a Lambda Invoke API checked by botocore's SigV4 signer, started
/// by a test and stopped when it is released (its stdin closes). A missing Python package fails
/// the test that starts it, never skips it.
public final class HookPeer: @unchecked Sendable {
    /// `whsec_` + base64 of 32 bytes: what AUTH_HOOK_SECRET is set to.
    public static let secret = "whsec_" + Base64.encoded([UInt8](repeating: 0x5A, count: 32))
    public static let region = "us-east-1"
    /// The credentials the handlers sign Lambda calls with, and the peer checks them with.
    public static let accessKey = "AKIDHOOKPEER", secretKey = "hook-peer-secret"

    let process: RunningProcess
    public let port: Int

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init() throws {
        process = try ProcessRunner.start("/usr/bin/env", arguments: [
            "python3", TestSupport.scriptPath("hook_peer.py"), HookPeer.secret, HookPeer.accessKey, HookPeer.secretKey, HookPeer.region,
        ], environment: Environment.current())
        guard let answer = HookPeer.exchange(process, ["op": "port"]), let port = answer["port"]?.int64Value else {
            let output = process.finish()
            throw Failure(description: "hook_peer.py did not start: \(output.stderrText.suffix(2000))")
        }
        self.port = Int(port)
    }

    deinit {
        _ = process.finish()
    }

    public var url: String { "http://127.0.0.1:\(port)/hook" }
    public var lambdaEndpoint: String { "http://127.0.0.1:\(port)" }

    /// The handlers' environment for `hooks` (`AUTH_HOOKS`'s value), reaching this peer: its
    /// secret, its Lambda endpoint and the credentials it checks.
    public func environment(hooks: JSONValue) -> [String: String] {
        ["AUTH_HOOKS": hooks.serialized(), "AUTH_HOOK_SECRET": HookPeer.secret, "AWS_ENDPOINT_URL_LAMBDA": lambdaEndpoint,
         "AWS_REGION": HookPeer.region, "AWS_ACCESS_KEY_ID": HookPeer.accessKey, "AWS_SECRET_ACCESS_KEY": HookPeer.secretKey]
    }

    /// What `hook` answers from now on: `body` as JSON (or `raw` text), with `status`, after
    /// `delayMilliseconds`; `functionError` sets Lambda's X-Amz-Function-Error.
    public func answer(_ hook: String, status: Int = 200, body: JSONValue? = nil, raw: String? = nil, delayMilliseconds: Int = 0,
                       functionError: String? = nil) throws {
        var command: [String: JSONValue] = ["op": "answer", "hook": .string(hook), "status": .number(status),
                                            "delayMs": .number(delayMilliseconds)]
        if let body { command["body"] = body }
        if let raw { command["raw"] = .string(raw) }
        if let functionError { command["functionError"] = .string(functionError) }
        _ = try send(.object(command))
    }

    /// The requests received since the last call, each with whether its signature verified.
    public func requests() throws -> [JSONValue] {
        try send(["op": "requests"])["requests"]?.arrayValue ?? []
    }

    /// The access tokens' claims as PyJWT reads them, against `jwks`.
    public func decode(_ tokens: [String], jwks: JSONValue, audience: String) throws -> [JSONValue] {
        let answer = try send(["op": "decode", "jwks": jwks, "audience": .string(audience), "tokens": .array(tokens.map(JSONValue.string))])
        guard let claims = answer["claims"]?.arrayValue else { throw Failure(description: "PyJWT: \(answer.serialized())") }
        return claims
    }

    func send(_ command: JSONValue) throws -> JSONValue {
        guard let answer = HookPeer.exchange(process, command) else { throw Failure(description: "hook_peer.py went away") }
        if let error = answer["error"]?.stringValue { throw Failure(description: error) }
        return answer
    }

    static func exchange(_ process: RunningProcess, _ command: JSONValue) -> JSONValue? {
        process.exchangeLine(command.serializedBytes()).flatMap { try? JSONValue.parse($0) }
    }
}
