/// Apple's token and revocation endpoints (Sign in with Apple REST API), through the project's
/// HTTPClient: form POSTs with a 3 s timeout, which the client caps by the invocation's deadline.
/// Nothing Apple returns, and no secret sent, ever reaches an error message or a log line.
struct AppleTokenClient: Sendable {
    let settings: AppleServerSettings
    let secrets: AppleClientSecrets
    let http: any HTTPClient

    static let timeout = 3.0

    struct Grant: Sendable {
        /// The ID token Apple issued with the grant, unverified: it came straight from Apple over
        /// TLS (OpenID Connect Core 3.1.3.7), and only its `sub` is read.
        var idToken: String
        var refreshToken: String?
    }

    /// Exchanges an authorization code (grant_type authorization_code).
    func exchange(code: String, clientID: String) throws(AuthError) -> Grant {
        let response = try post(settings.tokenURL, what: "token", [
            ("client_id", clientID), ("client_secret", try secrets.secret(clientID: clientID)),
            ("code", code), ("grant_type", "authorization_code"),
        ])
        switch response.status {
        case 200:
            guard let body = try? JSONValue.parse(response.body), let idToken = body["id_token"]?.stringValue else {
                throw AuthError(.providerUnavailable, "Apple's token endpoint answered without an ID token")
            }
            return Grant(idToken: idToken, refreshToken: body["refresh_token"]?.stringValue)
        default:
            switch AppleTokenClient.errorName(response) {
            case "invalid_grant":
                throw AuthError(.authorizationCodeInvalid, "Apple refused the authorization code (expired, used or issued to another app)")
            default:
                throw try AppleTokenClient.failure(response, endpoint: "token")
            }
        }
    }

    /// Revokes a refresh token. A token Apple no longer knows (`invalid_grant`) is revoked already.
    func revoke(refreshToken: String, clientID: String) throws(AuthError) {
        let response = try post(settings.revokeURL, what: "revocation", [
            ("client_id", clientID), ("client_secret", try secrets.secret(clientID: clientID)),
            ("token", refreshToken), ("token_type_hint", "refresh_token"),
        ])
        if response.status == 200 || AppleTokenClient.errorName(response) == "invalid_grant" { return }
        throw try AppleTokenClient.failure(response, endpoint: "revocation")
    }

    private func post(_ url: String, what: String, _ fields: [(name: String, value: String)]) throws(AuthError) -> HTTPResponse {
        let request = HTTPRequest(method: "POST", url: url,
                                  headers: [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")],
                                  body: Array(PercentEncoding.form(fields).utf8), timeout: AppleTokenClient.timeout,
                                  maximumResponseBytes: 64 << 10)
        do {
            return try http.send(request)
        } catch {
            if case .libraryUnavailable(let reason) = error {
                throw AuthError(.configError, "Apple's \(what) endpoint cannot be reached: \(reason)")
            }
            throw AuthError(.providerUnavailable, "Apple's \(what) endpoint cannot be reached", detail: error.description)
        }
    }

    /// Apple's `{"error": "..."}`, when the body is that.
    static func errorName(_ response: HTTPResponse) -> String? {
        (try? JSONValue.parse(response.body))?["error"]?.stringValue
    }

    /// `invalid_client`/`unauthorized_client` mean our configuration (team id, key id, key or
    /// client id) is wrong, which no retry fixes; everything else is Apple failing.
    static func failure(_ response: HTTPResponse, endpoint: String) throws(AuthError) -> AuthError {
        let name = errorName(response)
        switch name {
        case "invalid_client"?, "unauthorized_client"?:
            return AuthError(.configError, "Apple refused the client secret; check AUTH_APPLE_TEAM_ID, AUTH_APPLE_KEY_ID and AUTH_APPLE_PRIVATE_KEY",
                             detail: "Apple's \(endpoint) endpoint answered \(response.status) \(name ?? "")")
        default:
            return AuthError(.providerUnavailable, "Apple's \(endpoint) endpoint failed",
                             detail: "status \(response.status)\(name.map { " " + $0 } ?? "")")
        }
    }
}

/// Reading application/x-www-form-urlencoded (`+` is a space); public for the dev Apple server,
/// which reads what `PercentEncoding.form` writes to Apple.
public enum FormEncoding {
    /// The fields of a form body; nil when it is not one.
    public static func decode(_ body: String) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = unescape(parts[0]), let value = unescape(parts[1]) else { return nil }
            fields[name] = value
        }
        return fields
    }

    static func unescape(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
