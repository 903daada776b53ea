/// How a hook is reached: one call, its payload out, the body of its 200 answer back.
protocol HookClient: Sendable {
    /// - Parameters:
    ///   - id: the call's id (the payload's `id`, a URL hook's `webhook-id`).
    ///   - timeout: seconds, already capped by the invocation's deadline.
    func send(_ payload: [UInt8], id: String, timeout: Double) throws(HookFailure) -> [UInt8]
}

/// Why a hook gave no usable answer, for the log (never the caller's answer).
struct HookFailure: Error, Sendable, CustomStringConvertible {
    let reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }

    /// What the HTTP client's failure means for a hook: a too-large answer is the hook's fault,
    /// the rest is not reaching it in time.
    init(_ error: HTTPClientError) {
        switch error {
        case .responseTooLarge: self.init("its answer is larger than 16 KiB")
        default: self.init(error.description)
        }
    }
}

/// A URL hook: a POST signed as Standard Webhooks sign, so the app checks it with any of their
/// libraries. The HTTP client follows no redirect: a hook that moved answers 3xx, an error.
struct URLHookClient: HookClient {
    let url: String
    let secret: [UInt8]
    let http: any HTTPClient
    /// Real time: receivers refuse a `webhook-timestamp` more than five minutes off theirs,
    /// whatever clock the product logic runs on (a replay's fixed `AUTH_NOW`).
    let signingClock: any WallClock

    func send(_ payload: [UInt8], id: String, timeout: Double) throws(HookFailure) -> [UInt8] {
        let timestamp = String(Int64(signingClock.now()))
        let headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"), ("webhook-id", id), ("webhook-timestamp", timestamp),
            ("webhook-signature", StandardWebhookSignature.v1(id: id, timestamp: timestamp, body: payload, secret: secret)),
        ]
        let request = HTTPRequest(method: "POST", url: url, headers: headers, body: payload, timeout: timeout,
                                  maximumResponseBytes: HookAnswer.maximumBytes)
        let response: HTTPResponse
        do {
            response = try http.send(request)
        } catch {
            throw HookFailure(error)
        }
        guard response.status == 200 else { throw HookFailure("it answered HTTP \(response.status)") }
        return response.body
    }
}

/// A Lambda hook: Lambda's Invoke API (`POST /2015-03-31/functions/NAME/invocations`,
/// `RequestResponse`) signed with SigV4 for the service `lambda`; the function's result is the
/// answer. An answer with `X-Amz-Function-Error` is the function failing, whatever its body says.
struct LambdaHookClient: HookClient {
    let function: String
    /// `AWS_ENDPOINT_URL_LAMBDA`, or the region's public endpoint.
    let endpoint: String
    let signer: SigV4Signer
    let http: any HTTPClient
    let signingClock: any WallClock

    var url: String {
        (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/2015-03-31/functions/" + SigV4.uriEncode(function)
            + "/invocations"
    }

    func send(_ payload: [UInt8], id: String, timeout: Double) throws(HookFailure) -> [UInt8] {
        let request = HTTPRequest(method: "POST", url: url,
                                  headers: [("Content-Type", "application/json"), ("X-Amz-Invocation-Type", "RequestResponse")],
                                  body: payload, timeout: timeout, maximumResponseBytes: HookAnswer.maximumBytes)
        let response: HTTPResponse
        do {
            response = try http.send(try signer.sign(request, now: signingClock.now()))
        } catch let error as HTTPClientError {
            throw HookFailure(error)
        } catch {
            throw HookFailure("the call could not be signed: \(error)")
        }
        if let functionError = response.headers["x-amz-function-error"] {
            throw HookFailure("the function failed (\(functionError.prefix(40)))")
        }
        guard response.status == 200 else {
            let type = AWSServiceError(status: response.status, body: try? JSONValue.parse(response.body),
                                       headerType: response.headers["x-amzn-errortype"])
            throw HookFailure("Lambda answered \(type.description.prefix(200))")
        }
        return response.body
    }
}
