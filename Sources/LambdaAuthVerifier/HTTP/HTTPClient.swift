/// The one seam through which the product talks HTTP (JWKS, DynamoDB, STS).
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Whole-request timeout in seconds; zero or less means none.
    public var timeout: Double
    /// A response body larger than this is refused (the transfer is aborted).
    public var maximumResponseBytes: Int

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [],
                body: [UInt8] = [], timeout: Double = 3, maximumResponseBytes: Int = 1 << 20) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maximumResponseBytes = maximumResponseBytes
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header names lowercased; later duplicates win.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

public enum HTTPClientError: Error, Sendable, CustomStringConvertible {
    /// Could not connect, reset, DNS, TLS: the request may not have reached the server.
    case connection(String)
    case timeout
    case responseTooLarge(limit: Int)
    case invalidURL(String)
    /// The HTTP library cannot be loaded, or refuses an option every request needs: a problem of
    /// the machine's libcurl, which no retry fixes.
    case libraryUnavailable(String)

    public var description: String {
        switch self {
        case .connection(let reason): return "connection failed: \(reason)"
        case .timeout: return "timed out"
        case .responseTooLarge(let limit): return "response larger than \(limit) bytes"
        case .invalidURL(let url): return "invalid URL \(url)"
        case .libraryUnavailable(let reason): return reason
        }
    }
}

/// Redirects are never followed: a JWKS or AWS endpoint that redirects is misconfigured, and
/// following one would let a redirect choose where keys come from.
public protocol HTTPClient: Sendable {
    func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse
}
