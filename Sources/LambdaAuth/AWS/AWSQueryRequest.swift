/// One call of an AWS query-protocol API (STS `AssumeRole`, SES `SendEmail`): the parameters as a
/// form-encoded POST body, signed with SigV4, sent once (the caller decides about retries). What an
/// answer means is the caller's business; `errorSummary` reads the XML error's code and message.
struct AWSQueryRequest {
    enum Failure: Error {
        /// libcurl cannot be loaded: no retry helps.
        case libraryUnavailable(String)
        /// The request failed on the way (connection, timeout): worth another try.
        case transport(String)
        /// The request could not be built or signed: a bug or bad configuration.
        case unsendable(String)
    }

    let endpoint: String
    let signer: SigV4Signer
    let http: any HTTPClient
    /// Real time for signatures (see AWSJSONClient.signingClock).
    let signingClock: any WallClock

    func post(_ form: [(name: String, value: String)], timeout: Double) throws(Failure) -> HTTPResponse {
        let request = HTTPRequest(method: "POST", url: endpoint,
                                  headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")],
                                  body: Array(SigV4.encodeQuery(form).utf8), timeout: timeout, maximumResponseBytes: 64 << 10)
        do {
            return try http.send(try signer.sign(request, now: signingClock.now()))
        } catch HTTPClientError.libraryUnavailable(let reason) {
            throw .libraryUnavailable(reason)
        } catch let error as HTTPClientError {
            throw .transport(String(describing: error))
        } catch {
            throw .unsendable(String(describing: error))
        }
    }

    /// `<Code>` and `<Message>` of an error answer (`HTTP <status>` when there is no code).
    static func errorSummary(_ response: HTTPResponse) -> (code: String, message: String) {
        let text = String(decoding: response.body, as: UTF8.self)
        return (STSXML.uniqueElement("Code", in: text).flatMap(STSXML.unescape) ?? "HTTP \(response.status)",
                STSXML.uniqueElement("Message", in: text).flatMap(STSXML.unescape) ?? "")
    }
}
