import LambdaAuth
import LambdaAuthTooling
import Synchronization

/// A loopback stand-in for DynamoDB that forwards to a real peer (moto_server) and can replace
/// the answer to chosen operations with a fault. It also counts the operations it saw, so a test
/// or the bench can tell how many DynamoDB requests a handler made.
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
            let operation = DynamoDBProxy.operation(of: request)
            if operation == "Query", let index = DynamoDBProxy.indexName(of: request), let refusal = faults.refusal(ofQueriesOn: index) {
                return refusal
            }
            if let fault = faults.response(for: operation) { return fault }
            return DynamoDBProxy.forward(request, to: upstream, client: client)
        }
    }

    public var endpoint: String { server.baseURL }

    /// From now on, answers `operation` (`TransactWriteItems`, …) with `response` instead of
    /// forwarding it; nil forwards it again.
    public func inject(_ response: LoopbackHTTPServer.Response?, for operation: String) {
        faults.set(response, for: operation)
    }

    /// From now on, answers every Query on `index` with a ValidationException: a global
    /// secondary index is eventually consistent, so a flow whose decisions depend on one can be
    /// wrong on AWS even when moto (always consistent) lets it pass. A flow that never asks the
    /// index passes either way.
    public func refuseQueries(onIndex index: String) {
        faults.refuseQueries(on: index, with: .json(
            ["__type": "com.amazonaws.dynamodb.v20120810#ValidationException",
             "message": .string("this test refuses queries on \(index): they may be stale")],
            status: 400, headers: [("Content-Type", "application/x-amz-json-1.0")]))
    }

    /// Queries on an index that the proxy received (refused or not).
    public var indexQueries: Int { server.requests.filter { DynamoDBProxy.operation(of: $0) == "Query" && DynamoDBProxy.indexName(of: $0) != nil }.count }

    /// The operation of every request received so far, in order (retries included).
    public var operations: [String] { server.requests.map(DynamoDBProxy.operation) }

    /// The JSON body of every request of `operation` received so far, in order.
    public func bodies(of operation: String) -> [JSONValue] {
        server.requests.filter { DynamoDBProxy.operation(of: $0) == operation }.compactMap { try? JSONValue.parse($0.body) }
    }

    public func stop() { server.stop() }

    static func operation(of request: LoopbackHTTPServer.Request) -> String {
        let target = request.headers["x-amz-target"] ?? ""
        return target.hasPrefix(DynamoDBClient.targetPrefix) ? String(target.dropFirst(DynamoDBClient.targetPrefix.count)) : target
    }

    static func indexName(of request: LoopbackHTTPServer.Request) -> String? {
        (try? JSONValue.parse(request.body))?["IndexName"]?.stringValue
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
private final class FaultBox: Sendable {
    private let responses = Mutex<[String: LoopbackHTTPServer.Response]>([:])
    private let indexRefusals = Mutex<[String: LoopbackHTTPServer.Response]>([:])

    func refusal(ofQueriesOn index: String) -> LoopbackHTTPServer.Response? { indexRefusals.withLock { $0[index] } }
    func refuseQueries(on index: String, with response: LoopbackHTTPServer.Response) { indexRefusals.withLock { $0[index] = response } }

    func response(for operation: String) -> LoopbackHTTPServer.Response? { responses.withLock { $0[operation] } }
    func set(_ response: LoopbackHTTPServer.Response?, for operation: String) { responses.withLock { $0[operation] = response } }
}

extension FlowWorld {
    /// Runs a handler whose DynamoDB requests go through `proxy`: its answer and the requests it
    /// made, in order (the request-budget tests).
    public func countedRun(_ handler: String, _ event: [String: JSONValue], through proxy: DynamoDBProxy) throws -> (JSONValue, [String]) {
        let before = proxy.operations.count
        let output = run(handler, .object(event))
        guard let body = output.responseBody else {
            throw TestSupport.PeerFailure(description: "\(handler) answered nothing: \(output.stdoutText) \(output.stderrText.suffix(400))")
        }
        return (body, Array(proxy.operations.dropFirst(before)))
    }
}
