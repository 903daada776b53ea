/// `AUTH_CORS_ORIGINS` (contract section 16): the browser origins allowed to read our answers. A
/// handler echoes an allowed `Origin` in `access-control-allow-origin` (with `vary: origin`, so a
/// cache never hands one origin's answer to another); any other origin gets no CORS header, and
/// the browser keeps the answer from the page. Preflights are API Gateway's (the template's
/// `CorsConfiguration`) or `authctl serve`'s, never a handler's: no route takes OPTIONS.
public struct CORSPolicy: Sendable, Equatable {
    /// Exact origins (`https://app.example.com`, `http://localhost:3000`), or `*` for any.
    public let origins: [String]

    public static let allowedMethods = ["GET", "POST", "DELETE"]
    public static let allowedHeaders = ["authorization", "content-type"]
    public static let maxAgeSeconds = 600

    public init(origins: [String]) { self.origins = origins }

    /// nil when the variable is unset or empty: no CORS at all.
    public static func fromEnvironment(_ environment: [String: String]) throws(AuthError) -> CORSPolicy? {
        let origins = (environment["AUTH_CORS_ORIGINS"] ?? "").split(separator: ",").map { String($0).trimmingSpaceCharacters() }
            .filter { !$0.isEmpty }
        guard !origins.isEmpty else { return nil }
        for origin in origins where origin != "*" && WebOrigin(serialized: origin) == nil {
            throw AuthConfiguration.configError("AUTH_CORS_ORIGINS", "\(origin) is not an origin (http[s]://host[:port] in lowercase, no path) or *")
        }
        return CORSPolicy(origins: origins)
    }

    /// Only a serialized origin, even under `*`: `null` (a sandboxed page, a `file:` one) and
    /// anything else a client puts in the header are never reflected.
    public func allows(_ origin: String) -> Bool {
        WebOrigin(serialized: origin) != nil && (origins.contains("*") || origins.contains(origin))
    }

    /// The headers of an answer to a request from `origin` (none for an origin not allowed).
    public func responseHeaders(origin: String?) -> [String: String] {
        guard let origin, allows(origin) else { return [:] }
        return ["access-control-allow-origin": origin, "vary": "origin"]
    }

    /// A preflight's answer headers, as API Gateway's CORS configuration gives them.
    public func preflightHeaders(origin: String?) -> [String: String] {
        guard let origin, allows(origin) else { return [:] }
        return responseHeaders(origin: origin).merging([
            "access-control-allow-methods": (CORSPolicy.allowedMethods + ["OPTIONS"]).joined(separator: ","),
            "access-control-allow-headers": CORSPolicy.allowedHeaders.joined(separator: ","),
            "access-control-max-age": String(CORSPolicy.maxAgeSeconds),
        ]) { $1 }
    }
}

extension String {
    func trimmingSpaceCharacters() -> String {
        var slice = Substring(self)
        while slice.first == " " || slice.first == "\t" { slice = slice.dropFirst() }
        while slice.last == " " || slice.last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
