import ArgumentParser
import LambdaAuth
import LambdaAuthTooling
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `authctl serve`: the template's HTTP API on one local port (contract section 16), for app
/// teams pointing a simulator, an emulator or a web page at their backend.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve every route of the template's HTTP API locally, with its JWT authorizer, /openapi.json and the dev identity provider.",
        discussion: "With --dev, or when no provider is configured and nothing real is (no AUTH_STORE but the dev one, no signing key, "
            + "no AUTH_SECRETS), it runs on the dev defaults of `make demo` (a local store under --dev-dir, the dev identity provider, a dev "
            + "RSA signing key) and adds POST /dev/idp/{google|apple}/token; otherwise on the environment as given. The first line says which. "
            + "SIGINT or SIGTERM stops it once the requests in flight are answered."
    )

    @Option(help: "The IPv4 address to listen on (default 127.0.0.1: this machine only). Another, such as 0.0.0.0 for a phone on the network, is only ever this option's.")
    var host: String?
    @Option(help: "The port (0: any free one, printed).") var port: UInt16 = 8787
    @Option(help: "The dev identity provider's directory, and the dev store's (dev defaults only).") var devDir = DevIdentityProvider.defaultDirectory
    @Flag(help: "The dev defaults, refusing a DynamoDB store, AUTH_SECRETS or a signing key.") var dev = false
    @Option(name: .customLong("allow-host"), help: "A DNS name a request's Host may carry besides localhost (repeatable); IP addresses are always accepted.")
    var allowedHosts: [String] = []
    @Option(help: "The authorizer in front of the guarded routes, as the template's Authorizer parameter: jwt (API Gateway's JWT authorizer) or lambda (our authorizer function: revoked sessions refused within 5 s).")
    var authorizer: ServeAuthorizerOption = .jwt

    func run() throws {
        // Loopback unless --host says otherwise: anything else exposes the store (and, on the dev
        // defaults, an identity provider that signs anyone in) to the network.
        let address = host.map { $0 == "localhost" ? "127.0.0.1" : $0 } ?? "127.0.0.1"
        let context = AuthCtlContext.current
        var environment = context.environment
        let mode: ServeMode
        do {
            mode = try ServeMode.choose(environment: environment, devDirectory: devDir, explicitDev: dev)
        } catch {
            throw CommandFailure(error.description)
        }
        var devRoutes: LocalHTTPAPI.DevIdentityRoutes?
        if case .dev(let store) = mode {
            let dev = try DevEnvironment(directory: devDir)
            environment = dev.handlerEnvironment(environment)
            // As `make demo`: only the event lines (and real problems), one per request; email
            // codes on, delivered to an outbox the developer reads.
            let demoDefaults = ["AUTH_LOG_LEVEL": "warning", "AUTH_EMAIL": "on", "AUTH_STORE": store,
                                "AUTH_EMAIL_SENDER": "outbox:" + absolutePath(devDir + "/outbox")]
            for (name, value) in demoDefaults where (environment[name] ?? "").isEmpty { environment[name] = value }
            devRoutes = LocalHTTPAPI.DevIdentityRoutes(provider: dev.identityProvider, defaultAudiences: [
                .google: DevEnvironment.googleAudiences[0], .apple: DevEnvironment.appleAudiences[0],
            ])
        }
        // Blocked before any thread starts, so every thread inherits the mask and only sigwait
        // below takes them: a signal never interrupts a handler mid-request.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        // Bound before the handlers are built: on the dev defaults the passkey origin names the port.
        let router = ServeRouter()
        let listener: ServeListener
        do {
            listener = try ServeListener(host: address, port: port) { request in router.respond(request) }
        } catch {
            throw CommandFailure(error.description)
        }
        if devRoutes != nil, (environment["AUTH_PASSKEY_RP_ID"] ?? "").isEmpty {
            // The demo's passkeys: a browser allows WebAuthn over http on localhost only.
            environment["AUTH_PASSKEY_RP_ID"] = "localhost"
            environment["AUTH_PASSKEY_ORIGINS"] = "http://localhost:\(listener.port)"
        }
        let api = try LocalHTTPAPI(environment: environment, devIdentity: devRoutes, hostNames: allowedHosts, authorizer: authorizer.mode,
                                   loopbackCORS: devRoutes != nil)
        try startEventsWebhook(environment)
        var devConsole: ConsoleApp?
        if devRoutes != nil {
            let configuration = try AuthConfiguration.fromEnvironment(environment, forHandlers: false)
            devConsole = ConsoleApp(administration: api.administration, token: ConsoleApp.newToken(), hostNames: allowedHosts,
                                 recentEvents: ConsoleCommand.recentEvents(configuration), logger: Logger.jsonLines(level: .info))
        }
        let console = devConsole
        router.start { request in
            if let console, let answer = console.respond(request) { return answer }
            if console != nil, let answer = DemoApp.respond(request) { return answer }
            return api.respond(request)
        }
        if !address.hasPrefix("127.") {
            standardError("authctl serve: listening on \(address) as --host asked: reachable from the network" + (devRoutes != nil ? ", dev identity provider included" : ""))
        }
        // Unbuffered: a script (or a test) waits for this line to know the port.
        let modeText: String
        switch mode {
        case .dev(let store): modeText = "dev mode: store \(store), dev signing key; POST /dev/idp/google/token for an ID token"
        case .configured(let reason): modeText = "configured mode: the environment as given, no dev identity provider; \(reason)"
        }
        writeStandardOutputLine("lambda-auth serving on http://\(address):\(listener.port) (\(modeText))")
        if let console {
            writeStandardOutputLine("console: http://\(address):\(listener.port)\(console.entryPath)")
            writeStandardOutputLine("web demo: http://localhost:\(listener.port)\(DemoApp.basePath)")
        }
        var received: Int32 = 0
        while sigwait(&stopSignals, &received) != 0 {}
        standardError("authctl serve: stopping after the requests in flight (\(listener.requestsInFlight))")
        guard listener.stop() else { throw CommandFailure("requests still in flight after 30 s; stopped anyway") }
    }
}

extension ServeCommand {
    /// With `AUTH_EVENTS_WEBHOOK` set, the local store's events go to it as they are committed
    /// (contract section 22); on DynamoDB the events handler publishes them instead.
    func startEventsWebhook(_ environment: [String: String]) throws {
        let configuration = try AuthConfiguration.fromEnvironment(environment, forHandlers: false)
        guard let url = configuration.eventsWebhook else { return }
        guard case .local(let directory) = configuration.store else {
            throw CommandFailure("AUTH_EVENTS_WEBHOOK is for the local store; on DynamoDB deploy the events handler")
        }
        let webhook = EventsWebhook(url: url, secret: configuration.hookSecret,
                                    table: LocalTable(directory: directory, clock: configuration.clock),
                                    options: ItemEvents.Options(source: configuration.issuer, includeEmail: configuration.eventsIncludeEmail),
                                    logger: Logger.jsonLines(level: .warning))
        try webhook.start()
    }
}

/// Serve's requests go to the handler set once the listener is bound; until then (a few
/// milliseconds at start) a request is 503.
final class ServeRouter: Sendable {
    private let handler = Mutex<(@Sendable (ServeListener.Request) -> ServeListener.Response)?>(nil)

    func start(_ handler: @escaping @Sendable (ServeListener.Request) -> ServeListener.Response) {
        self.handler.withLock { $0 = handler }
    }

    func respond(_ request: ServeListener.Request) -> ServeListener.Response {
        guard let handler = handler.withLock({ $0 }) else { return ServeListener.message(503, "Service Unavailable") }
        return handler(request)
    }
}

/// `authctl openapi`: the document `serve` answers at /openapi.json, which `Infra/openapi.json`
/// must equal (`authctl openapi > Infra/openapi.json` after a route or a schema changes).
struct OpenAPICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "openapi",
        abstract: "Print the OpenAPI 3.1 document of the template's HTTP API (Infra/openapi.json)."
    )

    func run() throws {
        print(OpenAPIDocument.text, terminator: "")
    }
}

/// `--authorizer jwt|lambda`.
struct ServeAuthorizerOption: ExpressibleByArgument {
    let mode: ServeAuthorizer
    static let jwt = ServeAuthorizerOption(mode: .jwt)

    init(mode: ServeAuthorizer) { self.mode = mode }

    init?(argument: String) {
        guard let mode = ServeAuthorizer(rawValue: argument) else { return nil }
        self.mode = mode
    }

    static var allValueStrings: [String] { ServeAuthorizer.allCases.map(\.rawValue) }
    var defaultValueDescription: String { mode.rawValue }
}
