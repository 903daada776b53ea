/// What one request came to, as an operator asks about it (contract section 18): one event line
/// per request, named by the most specific thing that happened, with the fields that identify it.
/// Never a token, code or secret: only ids, names, codes and addresses.
public struct SecurityEvent: Sendable, Equatable {
    public var name: String
    /// `userId`, `sessionId`, `provider`, `code`, `type`, …: strings only.
    public var fields: [String: String]

    public init(_ name: String, fields: [String: String] = [:]) {
        self.name = name
        self.fields = fields
    }

    /// The event of `handler`'s answer to `request` (nil: the event could not be decoded). A
    /// handler that knows better (a guest upgraded by a link) sets `response.event`, whose name and
    /// fields win.
    public static func of(handler: String, request: InvocationRequest?, response: InvocationResponse) -> SecurityEvent {
        let body = request?.body ?? [:]
        let answer = response.body
        var event: SecurityEvent
        if response.status >= 400 {
            let code = answer["error"]?["code"]?.stringValue ?? "INTERNAL"
            switch code {
            case "RATE_LIMITED": event = SecurityEvent("rate_limited")
            case "REFRESH_TOKEN_REUSED": event = SecurityEvent("refresh_reuse_detected")
            case "MFA_CODE_INVALID", "MFA_TOKEN_INVALID": event = SecurityEvent("mfa_challenge_failed")
            default: event = SecurityEvent(handler.replacing(text: "-", with: "_") + "_failed")
            }
            event.fields["code"] = code
            event.fields.merge(response.failureSubject) { $1 }
        } else {
            event = SecurityEvent(successName(handler: handler, request: request, answer: answer))
            event.fields["userId"] = (answer["user"]?["id"] ?? answer["userId"])?.stringValue
            event.fields["sessionId"] = answer["session"]?["id"]?.stringValue
            if event.name == "session_revoked" { event.fields["sessionId"] = body["sessionId"]?.stringValue }
            if event.name == "apple_notification" { event.fields["type"] = answer["handled"]?.stringValue }
        }
        if let provider = body["provider"]?.stringValue, isPlainName(provider) { event.fields["provider"] = provider }
        if let sourceIP = request?.sourceIP, isPlainName(sourceIP, allowing: ".:") { event.fields["sourceIp"] = sourceIP }
        if let chosen = response.event {
            event.name = chosen.name
            event.fields.merge(chosen.fields) { $1 }
        }
        event.fields = event.fields.filter { !$0.value.isEmpty }
        return event
    }

    static func successName(handler: String, request: InvocationRequest?, answer: JSONValue) -> String {
        let action = request?.body["action"]?.stringValue
        let method = request?.method ?? "POST"
        switch handler {
        case "signin", "refresh", "signout": return handler
        case "delete-account": return "account_deleted"
        case "link-provider": return method == "DELETE" || action == "unlink" ? "identity_unlinked" : "identity_linked"
        case "sessions": return method == "DELETE" || action == "revoke" ? "session_revoked" : "sessions"
        case "apple-notifications": return "apple_notification"
        case "otp-start": return "code_sent"
        case "mfa":
            switch action {
            case "totp-confirm": return "mfa_enrolled"
            case "totp-remove": return "mfa_removed"
            case "challenge": return "signin"
            case "step-up": return "mfa_step_up"
            default: return "mfa"
            }
        case "passkey":
            switch action {
            case "register": return "passkey_registered"
            case "delete": return "passkey_deleted"
            default: return "passkey"
            }
        default: return handler.replacing(text: "-", with: "_")
        }
    }

    /// What a caller sent is logged only when it is plainly a name or an address: never free text
    /// that could carry a secret someone pasted in the wrong field.
    static func isPlainName(_ text: String, allowing extra: String = "") -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { $0.isASCIIAlphanumeric(or: "-_" + extra) }
    }

    /// The metrics' `outcome`: `ok` for any 2xx, otherwise the error code.
    public static func outcome(of response: InvocationResponse) -> String {
        response.status < 300 ? "ok" : response.body["error"]?["code"]?.stringValue ?? "INTERNAL"
    }
}
