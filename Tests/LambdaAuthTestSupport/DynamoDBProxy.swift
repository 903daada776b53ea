import LambdaAuth

/// A loopback stand-in for DynamoDB that forwards to a real peer (moto_server) and can replace
/// the answer to chosen operations with a fault. It also counts the operations it saw, so a test
/// or the bench can tell how many DynamoDB requests a whole handler process made.
///
/// moto does not check signatures, so a request signed for the proxy's host is forwarded as is.
public final class DynamoDBProxy: Sendable {
    public let server: LoopbackHTTPServer
    public let upstream: String
    private let faults: FaultBox

    public init(forwardingTo upstream: String) throws {
        self.upstream = upstream
        let faults = FaultBox()
        self.faults = faults
        let client = CurlHTTPClient()
        server = try LoopbackHTTPServer { request in
            if let fault = faults.response(for: DynamoDBProxy.operation(of: request)) { return fault }
            return DynamoDBProxy.forward(request, to: upstream, client: client)
        }
    }

    public var endpoint: String { server.baseURL }

    /// From now on, answers `operation` (`TransactWriteItems`, …) with `response` instead of
    /// forwarding it; nil forwards it again.
    public func inject(_ response: LoopbackHTTPServer.Response?, for operation: String) {
        faults.set(response, for: operation)
    }

    /// The operation of every request received so far, in order (retries included).
    public var operations: [String] { server.requests.map(DynamoDBProxy.operation) }

    public func stop() { server.stop() }

    static func operation(of request: LoopbackHTTPServer.Request) -> String {
        let target = request.headers["x-amz-target"] ?? ""
        return target.hasPrefix(DynamoDBClient.targetPrefix) ? String(target.dropFirst(DynamoDBClient.targetPrefix.count)) : target
    }

    static func forward(_ request: LoopbackHTTPServer.Request, to upstream: String,
                        client: CurlHTTPClient) -> LoopbackHTTPServer.Response {
        let headers = request.headers.filter { $0.key != "host" && $0.key != "content-length" }.map { ($0.key, $0.value) }
        let forwarded = HTTPRequest(method: request.method, url: upstream + request.target, headers: headers, body: request.body,
                                    timeout: 10, maximumResponseBytes: 8 << 20)
        guard let response = try? client.send(forwarded) else { return .drop }
        let passed = response.headers.filter { ["content-type", "x-amzn-errortype"].contains($0.key.lowercased()) }
        return LoopbackHTTPServer.Response(status: response.status, headers: passed.map { ($0.key, $0.value) }, body: response.body)
    }
}

/// The injected faults, read by the server's connection threads.
private final class FaultBox: @unchecked Sendable {
    private let lock = Mutex()
    private var responses: [String: LoopbackHTTPServer.Response] = [:]

    func response(for operation: String) -> LoopbackHTTPServer.Response? { lock.withLock { responses[operation] } }
    func set(_ response: LoopbackHTTPServer.Response?, for operation: String) { lock.withLock { responses[operation] = response } }
}
