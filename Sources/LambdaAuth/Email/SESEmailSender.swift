/// `AUTH_EMAIL_SENDER=ses`: Amazon SES `SendEmail` (the query API, version 2010-12-01, as STS's
/// AssumeRole is sent), SigV4-signed for service `ses`, from `AUTH_EMAIL_FROM` (an identity
/// verified in SES) through `AUTH_SES_ENDPOINT` (default: the region's `email.` endpoint). The
/// function's role needs `ses:SendEmail` only. Not retried here: the app asks for a new code.
struct SESEmailSender: EmailSender {
    let from: String
    let query: AWSQueryRequest

    init(from: String, endpoint: String, region: String, credentials: AWSCredentials, http: any HTTPClient,
         signingClock: any WallClock = SystemClock()) {
        self.from = from
        query = AWSQueryRequest(endpoint: endpoint.hasSuffix("/") ? endpoint : endpoint + "/",
                                signer: SigV4Signer(credentials: credentials, region: region, service: "ses"),
                                http: http, signingClock: signingClock)
    }

    func send(_ message: EmailMessage) throws(AuthError) {
        let form: [(name: String, value: String)] = [
            ("Action", "SendEmail"), ("Version", "2010-12-01"), ("Source", from),
            ("Destination.ToAddresses.member.1", message.to),
            ("Message.Subject.Data", message.subject), ("Message.Subject.Charset", "UTF-8"),
            ("Message.Body.Text.Data", message.body), ("Message.Body.Text.Charset", "UTF-8"),
        ]
        let response: HTTPResponse
        do {
            response = try query.post(form, timeout: 5)
        } catch {
            switch error {
            case .libraryUnavailable(let reason):
                throw AuthError(.configError, "AUTH_EMAIL_SENDER=ses cannot reach SES: \(reason)")
            case .transport(let reason), .unsendable(let reason):
                throw SESEmailSender.unavailable("SES SendEmail could not be sent: \(reason)")
            }
        }
        guard response.status == 200 else {
            // The error's code and message only: SES does not echo the message back.
            let (code, reason) = AWSQueryRequest.errorSummary(response)
            throw SESEmailSender.unavailable("SES SendEmail failed: \(code)\(reason.isEmpty ? "" : ": \(reason)")")
        }
    }

    static func unavailable(_ detail: String) -> AuthError {
        AuthError(.providerUnavailable, "the email could not be sent; try again", detail: detail)
    }
}
