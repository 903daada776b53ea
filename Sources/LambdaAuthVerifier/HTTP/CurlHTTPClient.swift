import CCurl
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// libcurl, loaded with dlopen on the first request rather than linked: linking it makes the
/// dynamic loader map libcurl's whole dependency tree (36 libraries on Debian) at every process
/// start, about 6 ms measured here, which a handler that never makes an HTTP call (file:// JWKS,
/// the local store, local credentials) would pay on every invocation.
package struct CurlLibrary: @unchecked Sendable {
    typealias GlobalInit = @convention(c) (Int) -> CURLcode
    typealias EasyInit = @convention(c) () -> UnsafeMutableRawPointer?
    typealias EasyHandle = @convention(c) (UnsafeMutableRawPointer?) -> Void
    typealias EasyPerform = @convention(c) (UnsafeMutableRawPointer?) -> CURLcode
    typealias EasyStrerror = @convention(c) (CURLcode) -> UnsafePointer<CChar>?
    typealias SlistAppend = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?
    typealias SlistFreeAll = @convention(c) (OpaquePointer?) -> Void

    let easyInit: EasyInit
    let easyCleanup: EasyHandle
    let easyReset: EasyHandle
    let easyPerform: EasyPerform
    let easyStrerror: EasyStrerror
    let slistAppend: SlistAppend
    let slistFreeAll: SlistFreeAll
    /// Variadic: called through the typed wrappers of the CCurl shim.
    let easySetopt: UnsafeMutableRawPointer
    let easyGetinfo: UnsafeMutableRawPointer

    /// Loaded once per process; the reason when it cannot be.
    static let shared: Result<CurlLibrary, HTTPClientError> = load()

    package static func load(name: String = "libcurl.so.4") -> Result<CurlLibrary, HTTPClientError> {
        guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown"
            return .failure(.libraryUnavailable("\(name) cannot be loaded (install libcurl, e.g. apt-get install libcurl4): \(reason)"))
        }
        func symbol(_ name: String) -> UnsafeMutableRawPointer? { dlsym(library, name) }
        guard let globalInit = symbol("curl_global_init"), let easyInit = symbol("curl_easy_init"),
              let easyCleanup = symbol("curl_easy_cleanup"), let easyReset = symbol("curl_easy_reset"),
              let easyPerform = symbol("curl_easy_perform"), let easyStrerror = symbol("curl_easy_strerror"),
              let slistAppend = symbol("curl_slist_append"), let slistFreeAll = symbol("curl_slist_free_all"),
              let easySetopt = symbol("curl_easy_setopt"), let easyGetinfo = symbol("curl_easy_getinfo") else {
            return .failure(.libraryUnavailable("\(name) lacks an expected function"))
        }
        let initialised = unsafeBitCast(globalInit, to: GlobalInit.self)(Int(CURL_GLOBAL_DEFAULT))
        guard initialised == CURLE_OK else {
            return .failure(.libraryUnavailable("\(name): curl_global_init failed (code \(initialised))"))
        }
        return .success(CurlLibrary(
            easyInit: unsafeBitCast(easyInit, to: EasyInit.self), easyCleanup: unsafeBitCast(easyCleanup, to: EasyHandle.self),
            easyReset: unsafeBitCast(easyReset, to: EasyHandle.self), easyPerform: unsafeBitCast(easyPerform, to: EasyPerform.self),
            easyStrerror: unsafeBitCast(easyStrerror, to: EasyStrerror.self),
            slistAppend: unsafeBitCast(slistAppend, to: SlistAppend.self),
            slistFreeAll: unsafeBitCast(slistFreeAll, to: SlistFreeAll.self), easySetopt: easySetopt, easyGetinfo: easyGetinfo))
    }

    /// An option libcurl refused: the request is not sent, since without the option it would not
    /// be the request we mean (one that follows redirects, or has no size or time bound). A URL
    /// it refuses (over its 8 MB input limit) is the request's fault; any other refusal is this
    /// libcurl's (too old for the option, built without a protocol), which no retry fixes.
    package func check(_ code: CURLcode, _ option: String, url: String) throws(HTTPClientError) {
        guard code != CURLE_OK else { return }
        if option == "CURLOPT_URL", code == CURLE_BAD_FUNCTION_ARGUMENT { throw .invalidURL(url) }
        let reason = easyStrerror(code).map { String(cString: $0) } ?? "curl error"
        throw .libraryUnavailable("libcurl refused \(option) (code \(code): \(reason)); the request was not sent")
    }
}

/// HTTP over the system libcurl. One easy handle is kept per client so that a resident Lambda
/// process reuses its TCP/TLS connections between invocations; a lock makes it safe to share.
public final class CurlHTTPClient: HTTPClient, Sendable {
    private let handle = Mutex<UnsafeMutableRawPointer?>(nil)

    public init() {}

    deinit {
        handle.withLock { handle in
            if let handle, case .success(let curl) = CurlLibrary.shared { curl.easyCleanup(handle) }
        }
    }

    public func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
        let library = try CurlLibrary.shared.get()
        let timeout: Double
        switch InvocationDeadline.cap(request.timeout, now: SystemClock().now()) {
        case .none: timeout = 0
        case .seconds(let seconds): timeout = seconds
        case .exhausted: throw .timeout
        }
        return try handle.withLock { (handle) throws(HTTPClientError) -> HTTPResponse in
            if handle == nil { handle = library.easyInit() }
            guard let curl = handle else { throw .connection("curl_easy_init failed") }
            return try perform(request, on: curl, library, timeout: timeout)
        }
    }

    /// One transfer on the kept handle; the caller holds its lock.
    private func perform(_ request: HTTPRequest, on curl: UnsafeMutableRawPointer, _ library: CurlLibrary,
                         timeout: Double) throws(HTTPClientError) -> HTTPResponse {
        library.easyReset(curl)
        let setopt = library.easySetopt

        let transfer = Transfer(limit: request.maximumResponseBytes)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var headerList: OpaquePointer?
        defer { library.slistFreeAll(headerList) }
        for header in request.headers {
            headerList = library.slistAppend(headerList, "\(header.name): \(header.value)")
        }
        // curl adds "Expect: 100-continue" to large POSTs, costing a round trip; AWS does not need it.
        headerList = library.slistAppend(headerList, "Expect:")

        func check(_ code: CURLcode, _ option: String) throws(HTTPClientError) {
            try library.check(code, option, url: request.url)
        }
        try check(lambda_auth_curl_setopt_string(setopt, curl, CURLOPT_URL, request.url), "CURLOPT_URL")
        try check(lambda_auth_curl_setopt_long(setopt, curl, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try check(lambda_auth_curl_setopt_long(setopt, curl, CURLOPT_FOLLOWLOCATION, 0), "CURLOPT_FOLLOWLOCATION")
        try check(lambda_auth_curl_setopt_long(setopt, curl, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS)), "CURLOPT_PROTOCOLS")
        // No timeout (zero) only outside an invocation: the Runtime API's /next blocks until an
        // event comes. Inside one, the invocation's deadline caps every request's own timeout.
        let hasTimeout = timeout > 0
        try check(lambda_auth_curl_setopt_long(setopt, curl, CURLOPT_TIMEOUT_MS, hasTimeout ? max(1, Int(timeout * 1000)) : 0),
                  "CURLOPT_TIMEOUT_MS")
        try check(lambda_auth_curl_setopt_long(setopt, curl, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int((hasTimeout ? min(timeout, 3) : 3) * 1000))),
                  "CURLOPT_CONNECTTIMEOUT_MS")
        try check(lambda_auth_curl_setopt_off_t(setopt, curl, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maximumResponseBytes)),
                  "CURLOPT_MAXFILESIZE_LARGE")
        try check(lambda_auth_curl_setopt_string(setopt, curl, CURLOPT_CUSTOMREQUEST, request.method), "CURLOPT_CUSTOMREQUEST")
        if request.method == "HEAD" { try check(lambda_auth_curl_setopt_long(setopt, curl, CURLOPT_NOBODY, 1), "CURLOPT_NOBODY") }
        try check(lambda_auth_curl_setopt_slist(setopt, curl, CURLOPT_HTTPHEADER, headerList), "CURLOPT_HTTPHEADER")
        try check(lambda_auth_curl_setopt_write_function(setopt, curl, CURLOPT_WRITEFUNCTION, curlWriteBody), "CURLOPT_WRITEFUNCTION")
        try check(lambda_auth_curl_setopt_pointer(setopt, curl, CURLOPT_WRITEDATA, context), "CURLOPT_WRITEDATA")
        try check(lambda_auth_curl_setopt_write_function(setopt, curl, CURLOPT_HEADERFUNCTION, curlWriteHeader), "CURLOPT_HEADERFUNCTION")
        try check(lambda_auth_curl_setopt_pointer(setopt, curl, CURLOPT_HEADERDATA, context), "CURLOPT_HEADERDATA")

        let performed: Result<CURLcode, HTTPClientError> = request.body.withUnsafeBufferPointer { body in
            do throws(HTTPClientError) {
                if !body.isEmpty || request.method == "POST" || request.method == "PUT" {
                    try check(lambda_auth_curl_setopt_long(setopt, curl, CURLOPT_POSTFIELDSIZE, body.count), "CURLOPT_POSTFIELDSIZE")
                    try check(lambda_auth_curl_setopt_pointer(
                        setopt, curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: body.baseAddress ?? UnsafePointer(bitPattern: 1)!)),
                        "CURLOPT_POSTFIELDS")
                }
                return .success(library.easyPerform(curl))
            } catch {
                return .failure(error)
            }
        }
        let code = try performed.get()

        if transfer.exceeded { throw .responseTooLarge(limit: request.maximumResponseBytes) }
        switch code {
        case CURLE_OK: break
        case CURLE_OPERATION_TIMEDOUT: throw .timeout
        case CURLE_FILESIZE_EXCEEDED: throw .responseTooLarge(limit: request.maximumResponseBytes)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: throw .invalidURL(request.url)
        default: throw .connection(library.easyStrerror(code).map { String(cString: $0) } ?? "curl error \(code)")
        }
        var status = 0
        try check(lambda_auth_curl_getinfo_long(library.easyGetinfo, curl, CURLINFO_RESPONSE_CODE, &status), "CURLINFO_RESPONSE_CODE")
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
    package func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, characters.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
