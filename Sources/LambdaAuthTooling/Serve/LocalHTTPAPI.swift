import LambdaAuth
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// What `authctl serve` answers (contract section 16): the template's HTTP API in one process.
/// Each request to a catalogue route becomes the payload 2.0 event API Gateway would build and
/// goes through `HandlerMain.respond`, the invocation path the zips run, with its one event line;
/// guarded routes pass `GatewayAuthorizer` first. Serve's own answers (404, 401, preflights, the
/// OpenAPI document, the dev identity provider's tokens) write one line each too.
public final class LocalHTTPAPI: Sendable {
    /// The dev identity provider's token route, on the embedded dev defaults only.
    public struct DevIdentityRoutes: Sendable {
        public let provider: DevIdentityProvider
        /// Each provider's default `aud` when the request names none (the first accepted audience).
        public let defaultAudiences: [ProviderName: String]

        public init(provider: DevIdentityProvider, defaultAudiences: [ProviderName: String]) {
            self.provider = provider
            self.defaultAudiences = defaultAudiences
        }
    }

    struct Route: Sendable {
        let entry: HandlerEntry
        let route: HTTPRoute
        let handler: Result<any RequestHandler, AuthError>
    }

    let routes: [String: Route]
    let services: AuthServices
    let settings: LambdaSettings
    let authorizer: GatewayAuthorizer
    /// Set when serve runs the template's `Authorizer=lambda`: our `authorizer` instead of `authorizer`.
    let lambdaAuthorizer: LambdaAuthorizerGate?
    let devIdentity: DevIdentityRoutes?
    /// DNS names a request's `Host` may carry besides `localhost` (`--allow-host`), lowercased.
    let hostNames: Set<String>
    let logger: Logger
    /// The dev defaults' CORS when AUTH_CORS_ORIGINS is unset: any `http://localhost:<port>` or
    /// `http://127.0.0.1:<port>` origin, so that a page on a dev server (Vite, Next) can call
    /// serve. The deployed handlers never have it: their list is AUTH_CORS_ORIGINS alone.
    let loopbackCORS: Bool
    /// Every event handed to a handler, before it runs: for tests, which cannot see the event a
    /// handler decodes (InvocationRequest keeps no request context).
    let eventObserver: (@Sendable (JSONValue) -> Void)?

    /// Builds every handler of the catalogue on one set of services from `environment`: a
    /// configuration error is thrown here, at start, as a Lambda init error would be.
    /// `logSink`: where the log lines go (stderr; a test keeps them).
    /// `loopbackCORS`: the dev defaults' CORS for loopback origins, used while AUTH_CORS_ORIGINS is unset.
    public init(environment: [String: String], devIdentity: DevIdentityRoutes? = nil, hostNames: [String] = [],
                authorizer mode: ServeAuthorizer = .jwt, loopbackCORS: Bool = false,
                eventObserver: (@Sendable (JSONValue) -> Void)? = nil,
                logSink: @escaping @Sendable (String) -> Void = writeStandardErrorLine) throws(AuthError) {
        settings = try LambdaSettings.fromEnvironment(environment)
        logger = Logger.jsonLines(level: settings.logLevel, sink: logSink)
        let services = try AuthServices.start(environment: environment, logger: logger)
        self.services = services
        var routes: [String: Route] = [:]
        for entry in HandlerCatalogue.all {
            let handler = Result { () throws(AuthError) in try entry.compose(services) }
            for route in entry.routes {
                routes[GatewayEvent.routeKey(route)] = Route(entry: entry, route: route, handler: handler)
            }
        }
        self.routes = routes
        authorizer = GatewayAuthorizer(issuer: services.accessTokenRules.issuer, audiences: services.accessTokenRules.audiences) {
            let keys = (try? services.accessTokenKeys())??.keys ?? []
            return keys.map { JSONWebKey(keyID: $0.keyID, material: $0.signingKey.publicMaterial) }
        }
        lambdaAuthorizer = mode == .lambda ? LambdaAuthorizerGate(services: services, testMode: settings.testMode) : nil
        self.devIdentity = devIdentity
        self.loopbackCORS = loopbackCORS && settings.cors == nil
        self.hostNames = Set(hostNames.map { $0.lowercased() })
        self.eventObserver = eventObserver
    }

    /// With `--authorizer lambda`: the authorizer's table reads so far (tests count them).
    public var authorizerTableReads: Int? { lambdaAuthorizer?.tableReads }

    /// Generated once: the catalogue and the schemas are fixed for the life of the process.
    static let openAPIBody = Array(OpenAPIDocument.text.utf8)

    public func respond(_ request: ServeListener.Request) -> ServeListener.Response {
        let startedAt = monotonicSeconds()
        let requestID = SystemRandomSource().identifier(bits: 64)
        let origin = request.headers.last { $0.name.lowercased() == "origin" }?.value
        let path = GatewayEvent.split(request.target).path
        let requestLogger = logger.with(requestID: requestID)
        return CurrentInvocation.serving(requestID) {
            if let refusal = refusal(request) {
                writeLine(event: "gateway_failed", request, path: path, status: refusal.status, logger: requestLogger, startedAt: startedAt)
                return refusal
            }
            if let route = routes["\(request.method) \(path)"] {
                return invoke(route, request, requestID: requestID, origin: origin, logger: requestLogger, startedAt: startedAt)
            }
            var response: ServeListener.Response
            let event: String
            if request.method == "OPTIONS", let cors = corsPolicy(origin: origin), request.headers.contains(where: {
                $0.name.lowercased() == "access-control-request-method" }) {
                response = ServeListener.Response(status: 204, headers: cors.preflightHeaders(origin: origin).sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
                event = "cors_preflight"
            } else if request.method == "GET", path == "/openapi.json" {
                response = ServeListener.Response(status: 200, headers: [("content-type", "application/json")],
                                                  body: LocalHTTPAPI.openAPIBody)
                event = "openapi"
            } else if request.method == "GET", path == "/example/whoami" {
                response = exampleRoute(request)
                event = response.status == 200 ? "example" : "gateway_failed"
            } else if let devIdentity, request.method == "POST", path.hasPrefix("/dev/idp/"), path.hasSuffix("/token") {
                response = devToken(devIdentity, request, path: path)
                event = "dev_idp_token"
            } else {
                response = ServeListener.message(404, "Not Found")
                event = "gateway_failed"
            }
            if event != "cors_preflight" { response.headers += corsHeaders(origin) }
            writeLine(event: event, request, path: path, status: response.status, logger: requestLogger, startedAt: startedAt)
            return response
        }
    }

    /// What no route may see. A page on a DNS name that its attacker points at 127.0.0.1 (DNS
    /// rebinding) reaches serve as same-origin: its `Host` still names the attacker's domain, so
    /// only localhost, IP literals (the Android emulator's 10.0.2.2) and `--allow-host` names pass.
    /// Two `Authorization` headers would be one for the authorizer and another, joined, for the
    /// handler.
    func refusal(_ request: ServeListener.Request) -> ServeListener.Response? {
        let hosts = request.headers.filter { $0.name.lowercased() == "host" }.map(\.value)
        if let host = hosts.first, !LocalHTTPAPI.acceptsHost(host, names: hostNames) {
            return ServeListener.refusal(403, "serve answers Host localhost, an IP address or an --allow-host name, not \(host)")
        }
        if request.headers.count(where: { $0.name.lowercased() == "authorization" }) > 1 {
            return ServeListener.refusal(400, "more than one Authorization header")
        }
        return nil
    }

    /// `host[:port]` whose host is an IP literal, `localhost` or one of `names`.
    public static func acceptsHost(_ value: String, names: Set<String>) -> Bool {
        var host = Substring(value.lowercased())
        var port: Substring = ""
        if host.first == "[" {
            guard let close = host.firstIndex(of: "]") else { return false }
            port = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(host), &address) == 1 else { return false }
        } else {
            if let colon = host.firstIndex(of: ":") {
                port = host[colon...]
                host = host[..<colon]
            }
            if host.hasSuffix(".") { host = host.dropLast() }
            var address = in_addr()
            guard inet_pton(AF_INET, String(host), &address) == 1 || host == "localhost" || names.contains(String(host)) else { return false }
        }
        return port.isEmpty || (port.first == ":" && port.count > 1 && port.dropFirst().allSatisfy(\.isASCII) && UInt16(port.dropFirst()) != nil)
    }

    /// The template's example of the app's own API behind the authorizer (`GET /example/whoami`,
    /// an inline Python function there): the verified claims echoed, and the user's app metadata
    /// read the way an API reads a role, so that an app tries its protected calls locally too.
    func exampleRoute(_ request: ServeListener.Request) -> ServeListener.Response {
        if let lambdaAuthorizer {
            switch lambdaAuthorizer.authorize(request, route: .get("/example/whoami", guarded: true), requestID: "example",
                                              epochMilliseconds: Int64(services.clock.now() * 1000), logger: logger) {
            case .refused(let response): return response
            case .allowed(let context):
                let body: JSONValue = ["userId": context["sub"] ?? .null, "sessionId": context["sid"] ?? .null, "appMetadata": [:],
                                       "claims": .object(context)]
                return ServeListener.Response(status: 200, headers: [("content-type", "application/json")], body: body.serializedBytes())
            }
        }
        let authorization = request.headers.last { $0.name.lowercased() == "authorization" }?.value
        guard let claims = authorizer.claims(authorization: authorization, now: services.clock.nowSeconds) else {
            return ServeListener.message(401, "Unauthorized")
        }
        let metadata = claims["app_metadata"]?.stringValue.flatMap { try? JSONValue.parse(Array($0.utf8)) } ?? [:]
        let body: JSONValue = ["userId": claims["sub"] ?? .null, "sessionId": claims["sid"] ?? .null, "appMetadata": metadata,
                               "claims": .object(claims)]
        return ServeListener.Response(status: 200, headers: [("content-type", "application/json")], body: body.serializedBytes())
    }

    func invoke(_ route: Route, _ request: ServeListener.Request, requestID: String, origin: String?, logger: Logger,
                startedAt: Double) -> ServeListener.Response {
        let path = GatewayEvent.split(request.target).path
        var claims: [String: JSONValue]?
        var lambdaContext: [String: JSONValue]?
        if route.route.guarded, let lambdaAuthorizer {
            switch lambdaAuthorizer.authorize(request, route: route.route, requestID: requestID,
                                              epochMilliseconds: Int64(services.clock.now() * 1000), logger: logger) {
            case .refused(var response):
                writeLine(event: "gateway_failed", request, path: path, status: response.status, logger: logger, startedAt: startedAt)
                response.headers += corsHeaders(origin)
                return response
            case .allowed(let context): lambdaContext = context
            }
        } else if route.route.guarded {
            let authorization = request.headers.last { $0.name.lowercased() == "authorization" }?.value
            claims = authorizer.claims(authorization: authorization, now: services.clock.nowSeconds)
            guard claims != nil else {
                writeLine(event: "gateway_failed", request, path: path, status: 401, logger: logger, startedAt: startedAt)
                return ServeListener.message(401, "Unauthorized", headers: corsHeaders(origin))
            }
        }
        var event = GatewayEvent.make(request, route: route.route, requestID: requestID, claims: claims,
                                      epochMilliseconds: Int64(services.clock.now() * 1000))
        if let lambdaContext { event = LambdaAuthorizerGate.withContext(event, lambdaContext) }
        eventObserver?(event)
        // Method and path on the request's lines, which the event line alone would not say.
        var context = InvocationContext(requestID: requestID, logger: logger)
        context.logger[metadataKey: "method"] = .string(request.method)
        context.logger[metadataKey: "path"] = .string(path)
        let decoded = EventCodec.decode(event.serializedBytes())
        let decodedRequest = try? decoded.request.get()
        let response: InvocationResponse
        switch decoded.request {
        case .failure(let error):
            response = HandlerMain.refuse(error, context: context)
        case .success(let invocation):
            do {
                response = try HandlerMain.respond(to: invocation, context: context, testMode: settings.testMode) {
                    try route.handler.get()
                }
            } catch {
                context.logger.error("the handler failed unexpectedly", metadata: ["detail": .string(String(describing: error.underlying))])
                // What API Gateway answers when the function fails.
                let failed = InvocationResponse(error: .internalError())
                RequestReport(handler: route.entry.name, settings: settings, metricsSink: writeStandardErrorLine)
                    .record(decodedRequest, failed, context: context, startedAt: startedAt)
                return ServeListener.message(500, "Internal Server Error", headers: corsHeaders(origin))
            }
        }
        RequestReport(handler: route.entry.name, settings: settings, metricsSink: writeStandardErrorLine)
            .record(decodedRequest, response, context: context, startedAt: startedAt)
        // The local store's deferred checkpoint, as after a Lambda response (HandlerMain's).
        for failure in StoreMaintenance.runDue() {
            logger.warning("store maintenance failed; it is retried later", metadata: ["reason": .string(failure.description)])
        }
        let document = EventCodec.encode(response, kind: decoded.kind, cors: corsPolicy(origin: origin), origin: decodedRequest?.headers["origin"])
        return LocalHTTPAPI.httpResponse(document)
    }

    /// The handler's response document as API Gateway turns it into HTTP: status, headers, and
    /// the body decoded from base64 when flagged.
    public static func httpResponse(_ document: JSONValue) -> ServeListener.Response {
        let status = document["statusCode"]?.int64Value.map(Int.init) ?? 500
        var headers: [(String, String)] = []
        if case .object(let members)? = document["headers"] {
            for name in members.keys.sorted() { headers.append((name, members[name]?.stringValue ?? "")) }
        }
        let text = document["body"]?.stringValue ?? ""
        let body = document["isBase64Encoded"]?.boolValue == true ? Base64.decoded(text) ?? [] : Array(text.utf8)
        return ServeListener.Response(status: status, headers: headers, body: body)
    }

    /// AUTH_CORS_ORIGINS when set; on the dev defaults without it, a policy of the one loopback
    /// origin asking (scheme http, host localhost or 127.0.0.1, any port), so that the headers
    /// and preflights are the ones the configured list would give it.
    func corsPolicy(origin: String?) -> CORSPolicy? {
        if let cors = settings.cors { return cors }
        guard loopbackCORS, let origin, LocalHTTPAPI.isLoopbackDevOrigin(origin) else { return nil }
        return CORSPolicy(origins: [origin])
    }

    public static func isLoopbackDevOrigin(_ origin: String) -> Bool {
        guard let parsed = WebOrigin(serialized: origin) else { return false }
        return parsed.scheme == "http" && (parsed.host == "localhost" || parsed.host == "127.0.0.1")
    }

    /// The store's operator functions (`authctl users`), for the console serve hosts.
    public var administration: AccountAdministration { services.administration }

    func corsHeaders(_ origin: String?) -> [(String, String)] {
        (corsPolicy(origin: origin)?.responseHeaders(origin: origin) ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// `POST /dev/idp/{google|apple}/token` `{"sub", "email"?, "name"?, "aud"?, "nonce"?}` → `{"idToken"}`.
    func devToken(_ routes: DevIdentityRoutes, _ request: ServeListener.Request, path: String) -> ServeListener.Response {
        let providerName = String(path.dropFirst("/dev/idp/".count).dropLast("/token".count))
        guard let provider = [ProviderName.google, .apple].first(where: { $0.rawValue == providerName }), let defaultAudience = routes.defaultAudiences[provider] else {
            return ServeListener.message(404, "Not Found")
        }
        func invalid(_ message: String) -> ServeListener.Response {
            let body = AuthError(.invalidRequest, message).body
            return ServeListener.Response(status: 400, headers: [("content-type", "application/json")], body: body.serializedBytes())
        }
        guard case .object(let fields)? = try? JSONValue.parse(request.body) else { return invalid("the body must be a JSON object") }
        let known: Set = ["sub", "email", "name", "aud", "nonce"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) { return invalid("unknown field \(unknown)") }
        for (name, value) in fields where value.stringValue == nil { return invalid("\(name) must be a string") }
        guard let subject = fields["sub"]?.stringValue, !subject.isEmpty else { return invalid("sub is required") }
        var options = DevTokenOptions(subject: subject, audience: fields["aud"]?.stringValue ?? defaultAudience)
        options.email = fields["email"]?.stringValue
        options.name = fields["name"]?.stringValue
        options.nonce = fields["nonce"]?.stringValue
        do {
            let token = try routes.provider.token(claims: options.claims(for: provider, now: services.clock.nowSeconds), provider: provider)
            return ServeListener.Response(status: 200, headers: [("content-type", "application/json"), ("cache-control", "no-store")],
                                          body: JSONValue.object(["idToken": .string(token)]).serializedBytes())
        } catch {
            return ServeListener.message(500, "Internal Server Error")
        }
    }

    /// Serve's own answer's line, shaped as a handler's event line (contract section 18).
    func writeLine(event: String, _ request: ServeListener.Request, path: String, status: Int, logger: Logger, startedAt: Double) {
        var logger = logger
        logger.logLevel = .trace
        var metadata: Logger.Metadata = [
            "event": .string(event), "method": .string(request.method), "path": .string(path), "status": .number(status),
            "durationMs": .decimal((monotonicSeconds() - startedAt) * 1000),
        ]
        if !request.peerAddress.isEmpty { metadata["sourceIp"] = .string(request.peerAddress) }
        if status == 401 { metadata["code"] = "UNAUTHORIZED" } else if status == 404 { metadata["code"] = "NOT_FOUND" }
        logger.log(level: status >= 500 ? .error : status >= 400 ? .warning : .info, "\(event)", metadata: metadata)
    }
}
