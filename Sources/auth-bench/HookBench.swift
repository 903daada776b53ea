import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Logging

/// Issue 40: a warm sign-in and refresh with an `accessTokenClaims` URL hook on loopback (the
/// Python peer of the tests, which verifies every signature), beside the same without hooks,
/// alternating, in one resident process as a warm Lambda runs them; and the bare round trip of
/// a signed POST to the same peer. The hook's share should be its round trip plus at most 0.1 ms
/// of ours (the payload, its signature, the answer's parse and checks).
enum HookBench {
    static var section: BenchSection { BenchSection(name: "hooks", run: run) }
    static let rounds = 201

    static func run(_ table: inout BenchTable) {
        let peer: HookPeer
        do {
            peer = try HookPeer()
            try peer.answer("accessTokenClaims", body: ["claims": ["tenant_id": "acme", "roles": ["admin", "billing"]]])
        } catch {
            table.add("hooks", "hook peer", "not run: \(error)")
            return
        }
        let world = FlowBench.makeWorld()
        let hooked = world.environment.merging(peer.environment(hooks: ["accessTokenClaims": ["url": .string(peer.url)]])) { $1 }
        // The third: the same hook answered in this process, without a network, so that what is
        // ours (the payload, its signature, the answer's parse and checks, the claims signed in)
        // is read off without the peer's and the loopback's noise.
        let answeredInProcess = InstantHookAnswer(body: JSONValue.object(["claims": ["tenant_id": "acme", "roles": ["admin", "billing"]]])
            .serializedBytes())
        let handlers = [(world.environment, nil), (hooked, nil), (hooked, answeredInProcess)].map { environment, http in
            let services = try! AuthServices(configuration: try! AuthConfiguration.fromEnvironment(environment),
                                             logger: Logger.jsonLines(level: .warning), httpClient: http)
            return (signIn: try! HandlerCatalogue.signin.compose(services), refresh: try! HandlerCatalogue.refresh.compose(services))
        }
        var hookCalls: [Double] = []
        func invoke(_ handler: any RequestHandler, _ body: [String: JSONValue]) -> (JSONValue, Double) {
            // A context per invocation, as the runtime makes one: its ledger times this one's hook call.
            let context = InvocationContext(requestID: "bench", logger: Logger.jsonLines(level: .warning))
            let started = monotonicSeconds()
            let response = try! handler.handle(InvocationRequest(kind: .direct, body: body), context: context)
            let elapsed = (monotonicSeconds() - started) * 1000
            guard response.status == 200 else { fatalError("bench: hooks: \(response.body.serialized())") }
            if let milliseconds = context.hooks.milliseconds { hookCalls.append(milliseconds) }
            return (response.body, elapsed)
        }
        let now = SystemClock().nowSeconds
        var signIn: [[Double]] = [[], [], []], refresh: [[Double]] = [[], [], []]
        for round in 0..<rounds {
            for variant in 0..<3 {
                let token = world.token(.google, subject: "hook-bench-\(variant)", email: "hooks@example.com", now: now)
                let (_, signInTime) = invoke(handlers[variant].signIn, ["provider": "google", "idToken": .string(token)])
                if round > 0 { signIn[variant].append(signInTime) }
                // A refresh of a session of its own, as an app's refreshes are spread over many
                // sessions: one session refreshed 200 times grows its family's file instead.
                let newcomer = world.token(.google, subject: "hook-bench-\(variant)-\(round)", email: nil, now: now)
                let (opened, _) = invoke(handlers[variant].signIn, ["provider": "google", "idToken": .string(newcomer)])
                let (_, refreshTime) = invoke(handlers[variant].refresh, ["refreshToken": opened["tokens"]?["refreshToken"] ?? ""])
                if round > 0 { refresh[variant].append(refreshTime) }
            }
        }
        _ = try? peer.requests()
        // The bare round trip: a signed POST of a payload-sized body, the answer read.
        let http = CurlHTTPClient()
        let secret = Base64.decoded(String(HookPeer.secret.dropFirst("whsec_".count)))!
        // JSON of a payload's size: the peer parses what it verified, as an app's hook does.
        let payload = JSONValue.object(["type": "roundTrip", "padding": .string(String(repeating: "x", count: 700))]).serializedBytes()
        var roundTrips: [Double] = []
        for index in 0..<rounds {
            let timestamp = String(Int64(SystemClock().now()))
            let id = "bench-\(index)"
            let request = HTTPRequest(method: "POST", url: peer.url, headers: [
                ("Content-Type", "application/json"), ("webhook-id", id), ("webhook-timestamp", timestamp),
                ("webhook-signature", StandardWebhookSignature.v1(id: id, timestamp: timestamp, body: payload, secret: secret)),
            ], body: payload, timeout: 2)
            let started = monotonicSeconds()
            _ = try? http.send(request)
            roundTrips.append((monotonicSeconds() - started) * 1000)
        }
        _ = try? peer.requests()
        let roundTrip = percentile(roundTrips, 0.5)
        for (name, samples) in [("sign-in", signIn), ("refresh", refresh)] {
            let plain = percentile(samples[0], 0.5), withHook = percentile(samples[1], 0.5), inProcess = percentile(samples[2], 0.5)
            table.add("hooks", "warm \(name), no hooks, median of \(rounds - 1)", format(plain, decimals: 3) + " ms")
            table.add("hooks", "warm \(name), accessTokenClaims URL hook on loopback (the Python peer)", format(withHook, decimals: 3) + " ms")
            table.add("hooks", "  \(name): the hook's share minus the peer's round trip (the peer's own variance included)",
                      format(withHook - plain - roundTrip, decimals: 3) + " ms")
            table.add("hooks", "warm \(name), the same hook answered in process (no network)", format(inProcess, decimals: 3) + " ms")
            table.add("hooks", "  \(name): ours (payload, signature, the answer's parse and checks, the claims signed in)",
                      format(inProcess - plain, decimals: 3) + " ms", target: "<= 0.1 ms")
        }
        table.add("hooks", "signed POST round trip to the peer, median", format(roundTrip, decimals: 3) + " ms")
        table.add("hooks", "the hook call as the handlers time it (payload signed, sent, answer read), median",
                  format(percentile(hookCalls, 0.5), decimals: 3) + " ms")
    }
}

/// An HTTP client whose every answer is `body` with status 200, at once: the hook's answer with
/// no network and no peer in the way.
struct InstantHookAnswer: HTTPClient {
    let body: [UInt8]

    func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["content-type": "application/json"], body: body)
    }
}
