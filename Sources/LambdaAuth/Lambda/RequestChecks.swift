/// What every handler checks of a request the same way: its method, and the caller's access token.
extension InvocationRequest {
    /// HTTP events must use one of `methods`; direct invocations count as POST.
    func requireMethod(_ methods: String..., hint: String? = nil) throws(AuthError) {
        guard methods.contains(method) else {
            throw AuthError(.invalidRequest, "method \(method) is not supported; \(hint ?? "use " + methods.joined(separator: " or "))")
        }
    }

    /// The caller's access token: `Authorization: Bearer …` on HTTP events, `accessToken` on
    /// direct ones. Whatever is missing or malformed is ACCESS_TOKEN_INVALID.
    func callerToken() throws(AuthError) -> String {
        guard let token = try presentedCallerToken() else {
            throw AuthError(.accessTokenInvalid, kind.isHTTP ? "the Authorization header with a Bearer access token is missing"
                                                             : "accessToken is missing")
        }
        return token
    }

    /// The caller's access token if the request carries one (signout may go by refresh token
    /// instead); one that is there but malformed is ACCESS_TOKEN_INVALID.
    func presentedCallerToken() throws(AuthError) -> String? {
        guard kind.isHTTP else {
            guard body["accessToken"] != nil else { return nil }
            do throws(AuthError) {
                guard let value = try RequestBody(body).optionalString("accessToken", maximumBytes: 8192) else {
                    throw AuthError(.accessTokenInvalid, "accessToken is missing")
                }
                return value
            } catch where error.code == .invalidRequest {
                throw AuthError(.accessTokenInvalid, "accessToken must be a string")
            }
        }
        guard let header = headers["authorization"] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw AuthError(.accessTokenInvalid, "the Authorization header must be 'Bearer <access token>'")
        }
        return String(parts[1]).trimmingCharacters(in: " ")
    }
}
