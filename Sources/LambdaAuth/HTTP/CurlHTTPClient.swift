import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// HTTP over the system libcurl. One easy handle is kept per client so that a resident Lambda
/// process reuses its TCP/TLS connections between invocations; a lock makes it safe to share.
public final class CurlHTTPClient: HTTPClient, @unchecked Sendable {
    private let lock = Mutex()
    private var handle: UnsafeMutableRawPointer?

    private static let globalInit: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    public init() {
        _ = CurlHTTPClient.globalInit
    }

    deinit {
        if let handle { curl_easy_cleanup(handle) }
    }

    public func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        lock.lock()
        defer { lock.unlock() }
        if handle == nil { handle = curl_easy_init() }
        guard let curl = handle else { throw .connection("curl_easy_init failed") }
        curl_easy_reset(curl)

        let transfer = Transfer(limit: request.maximumResponseBytes)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }
        for header in request.headers {
            headerList = curl_slist_append(headerList, "\(header.name): \(header.value)")
        }
        // curl adds "Expect: 100-continue" to large POSTs, costing a round trip; AWS does not need it.
        headerList = curl_slist_append(headerList, "Expect:")

        _ = lambda_auth_curl_setopt_string(curl, CURLOPT_URL, request.url)
        _ = lambda_auth_curl_setopt_long(curl, CURLOPT_NOSIGNAL, 1)
        _ = lambda_auth_curl_setopt_long(curl, CURLOPT_FOLLOWLOCATION, 0)
        _ = lambda_auth_curl_setopt_long(curl, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS))
        // A timeout of zero or less means none (the Runtime API's /next blocks until an event comes).
        let hasTimeout = request.timeout > 0
        _ = lambda_auth_curl_setopt_long(curl, CURLOPT_TIMEOUT_MS, hasTimeout ? Int(request.timeout * 1000) : 0)
        _ = lambda_auth_curl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, Int((hasTimeout ? min(request.timeout, 3) : 3) * 1000))
        _ = lambda_auth_curl_setopt_off_t(curl, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maximumResponseBytes))
        _ = lambda_auth_curl_setopt_string(curl, CURLOPT_CUSTOMREQUEST, request.method)
        if request.method == "HEAD" { _ = lambda_auth_curl_setopt_long(curl, CURLOPT_NOBODY, 1) }
        _ = lambda_auth_curl_setopt_slist(curl, CURLOPT_HTTPHEADER, headerList)
        _ = lambda_auth_curl_setopt_write_function(curl, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = lambda_auth_curl_setopt_pointer(curl, CURLOPT_WRITEDATA, context)
        _ = lambda_auth_curl_setopt_write_function(curl, CURLOPT_HEADERFUNCTION, curlWriteHeader)
        _ = lambda_auth_curl_setopt_pointer(curl, CURLOPT_HEADERDATA, context)

        let code: CURLcode = request.body.withUnsafeBufferPointer { body in
            if !body.isEmpty || request.method == "POST" || request.method == "PUT" {
                _ = lambda_auth_curl_setopt_long(curl, CURLOPT_POSTFIELDSIZE, body.count)
                _ = lambda_auth_curl_setopt_pointer(
                    curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: body.baseAddress ?? UnsafePointer(bitPattern: 1)!))
            }
            return curl_easy_perform(curl)
        }

        if transfer.exceeded { throw .responseTooLarge(limit: request.maximumResponseBytes) }
        switch code {
        case CURLE_OK: break
        case CURLE_OPERATION_TIMEDOUT: throw .timeout
        case CURLE_FILESIZE_EXCEEDED: throw .responseTooLarge(limit: request.maximumResponseBytes)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: throw .invalidURL(request.url)
        default: throw .connection(String(cString: curl_easy_strerror(code)))
        }
        var status = 0
        _ = lambda_auth_curl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(status: status, headers: transfer.headers, body: transfer.body)
    }
}

/// Accumulates one response; curl's callbacks reach it through an opaque pointer.
private final class Transfer {
    let limit: Int
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var exceeded = false

    init(limit: Int) { self.limit = limit }
}

private func curlWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                           _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if transfer.body.count + length > transfer.limit {
        transfer.exceeded = true
        return 0  // aborts the transfer
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        transfer.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: length))
    }
    return length
}

private func curlWriteHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                             _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        transfer.headers = [:]  // a new response (after 100 Continue) starts over
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t\r\n")
        transfer.headers[name] = value
    }
    return length
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, characters.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
