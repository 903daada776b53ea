import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP API of `Infra/template.yaml` (and `authctl serve`), one JSON request and answer at a
/// time. A non-2xx answer becomes the contract's error; a failure to reach the server is a
/// retryable `NETWORK_ERROR`.
struct Transport: Sendable {
    let baseURL: URL
    let session: URLSession

    func send(_ method: String, _ path: String, body: [String: JSON]? = nil, bearer: String? = nil) async throws(AuthClientError) -> JSON {
        var request = URLRequest(url: baseURL.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        request.timeoutInterval = 15
        request.setValue("application/json", forHTTPHeaderField: "accept")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "content-type")
            do {
                request.httpBody = try JSONEncoder().encode(body)
            } catch {
                throw .invalidResponse("the request could not be encoded: \(error)")
            }
        }
        let data: Data, response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw .network(error)
        }
        guard let http = response as? HTTPURLResponse else { throw .invalidResponse("not HTTP") }
        let answer = (try? JSONDecoder().decode(JSON.self, from: data)) ?? .null
        guard (200..<300).contains(http.statusCode) else {
            throw Transport.error(status: http.statusCode, answer: answer)
        }
        return answer
    }

    /// The contract's error body, or (API Gateway's own 401/404, a proxy's 502) what the status says.
    static func error(status: Int, answer: JSON) -> AuthClientError {
        if let error = answer["error"], let code = error["code"]?.stringValue {
            var retryAfter: Int?
            if case .number(let seconds)? = error["retryAfter"] { retryAfter = Int(seconds) }
            var retryable = false
            if case .bool(let value)? = error["retryable"] { retryable = value }
            var failure = AuthClientError(code: code, status: status, retryable: retryable,
                                          message: error["message"]?.stringValue ?? "", retryAfter: retryAfter)
            if code == "MFA_REQUIRED", let token = error["mfaToken"]?.stringValue {
                var factors: [String] = []
                if case .array(let names)? = error["factors"] { factors = names.compactMap(\.stringValue) }
                failure.mfaChallenge = MFAChallenge(mfaToken: token, factors: factors)
            }
            return failure
        }
        let message = answer["message"]?.stringValue ?? "HTTP \(status)"
        switch status {
        case 401: return AuthClientError(code: "ACCESS_TOKEN_INVALID", status: status, retryable: false, message: message)
        // The Lambda authorizer's refusal (Authorizer=lambda: `isAuthorized: false`), a revoked
        // session's token included: as its 401, a refresh tells whether the session is over.
        case 403 where message == "Forbidden":
            return AuthClientError(code: "ACCESS_TOKEN_INVALID", status: status, retryable: false, message: message)
        case 404: return AuthClientError(code: "NOT_FOUND", status: status, retryable: false, message: message)
        default: return AuthClientError(code: status >= 500 ? "SERVER_ERROR" : "HTTP_\(status)", status: status, retryable: status >= 500,
                                        message: message)
        }
    }
}

extension JSON {
    /// A member decoded as `T` (the server's answers are small; a round trip keeps it simple).
    func decoded<T: Decodable>(_ type: T.Type, at key: String) throws(AuthClientError) -> T {
        guard let member = self[key] else { throw .invalidResponse("no \(key)") }
        do {
            return try JSONDecoder().decode(T.self, from: try JSONEncoder().encode(member))
        } catch {
            throw .invalidResponse("\(key): \(error)")
        }
    }
}
