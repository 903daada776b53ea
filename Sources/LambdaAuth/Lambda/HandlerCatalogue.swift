/// Every handler executable, once: its name (executable, zip, `dist/<name>.zip` in the template),
/// its HTTP routes as `Infra/template.yaml` deploys them, and how it is composed. The Makefile
/// and `Infra/check-package.sh` read the names from this file's text (`Infra/handler-names.sh`,
/// which needs no build), so each entry keeps `public static let x = HandlerEntry(name: "…"` on
/// one line; authctl, the bench and the tests read `HandlerCatalogue.all`.
public enum HandlerCatalogue {
    // The three handlers that issue access tokens and open sessions (signin, refresh, mfa) are
    // the only ones that build the app's hooks (contract section 19): no other handler's start
    // can fail on them.
    public static let signin = HandlerEntry(name: "signin", routes: [.post("/auth/signin")]) { (services: AuthServices) throws(AuthError) -> any RequestHandler in
        var flow = services.signIn
        flow.hooks = try services.hooks()
        return SignInHandler(flow: flow)
    }

    public static let refresh = HandlerEntry(name: "refresh", routes: [.post("/auth/refresh")]) { (services: AuthServices) throws(AuthError) -> any RequestHandler in
        var flow = services.refresh
        flow.hooks = try services.hooks()
        return RefreshHandler(flow: flow)
    }

    public static let linkProvider = HandlerEntry(name: "link-provider", routes: [
        .post("/auth/link", guarded: true), .delete("/auth/link", guarded: true),
    ]) { services in
        LinkProviderHandler(flow: services.linkProvider, providers: services.providers)
    }

    // Not guarded: a client whose access token has expired still signs out by its refresh token.
    public static let signout = HandlerEntry(name: "signout", routes: [.post("/auth/signout")]) { services in
        SignOutHandler(flow: services.signOut)
    }

    public static let sessions = HandlerEntry(name: "sessions", routes: [
        .get("/auth/sessions", guarded: true), .delete("/auth/sessions", guarded: true),
    ]) { services in
        SessionsHandler(flow: services.sessions)
    }

    public static let deleteAccount = HandlerEntry(name: "delete-account", routes: [
        .delete("/auth/account", guarded: true), .post("/auth/delete-account", guarded: true),
    ]) { services in
        DeleteAccountHandler(flow: services.deleteAccount, providers: services.providers, testMode: services.testMode)
    }

    public static let wellKnown = HandlerEntry(name: "well-known", routes: [
        .get("/.well-known/openid-configuration"), .get("/.well-known/jwks.json"), .get("/.well-known/revocations"),
    ]) { services in
        let publisher = services.revocationPublisher
        return WellKnownHandler(documents: services.discoveryDocuments,
                                keys: { () throws(AuthError) in try services.accessTokenKeys() },
                                revocations: { () throws(AuthError) in try publisher.document() })
    }

    public static let appleNotifications = HandlerEntry(name: "apple-notifications", routes: [
        .post("/auth/apple/notifications"),
    ]) { services in
        AppleNotificationsHandler(flow: services.appleNotifications)
    }

    public static let otpStart = HandlerEntry(name: "otp-start", routes: [.post("/auth/otp/start")]) { services in
        OneTimeCodeStartHandler(flow: services.oneTimeCodesOnUse)
    }

    /// No JWT authorizer on its route: login-options has no caller; the handler checks the caller
    /// of every other action.
    public static let passkey = HandlerEntry(name: "passkey", routes: [.post("/auth/passkey")]) { services in
        PasskeyHandler(flow: services.passkeys)
    }

    /// No JWT authorizer on its route: `challenge` has no caller (its mfaToken proves the
    /// sign-in); the handler checks the caller of every other action.
    public static let mfa = HandlerEntry(name: "mfa", routes: [.post("/auth/mfa")]) { (services: AuthServices) throws(AuthError) -> any RequestHandler in
        var flow = services.mfa
        flow.signIn.hooks = try services.hooks()
        return MFAHandler(flow: flow)
    }

    /// No route: API Gateway invokes it in front of the routes the template guards, when its
    /// `Authorizer` parameter is `lambda`. One revocation list per process, kept warm.
    public static let authorizer = HandlerEntry(name: "authorizer", routes: []) { services in
        AuthorizerHandler(rules: services.accessTokenRules,
                          keys: { () throws(AuthError) in
                              // Each key's public JWK is derived once, when the key is loaded.
                              (try services.accessTokenKeys())?.keys.map(\.verificationKey) ?? []
                          },
                          revocations: services.makeRevocationCache(), clock: services.clock)
    }

    /// The table's DynamoDB Stream in, EventBridge out (contract section 22): no HTTP route, and
    /// built from the environment alone (no table, key or secret), so its role grants only
    /// `events:PutEvents`. A missing or invalid setting is each invocation's CONFIG_ERROR.
    public static let events = HandlerEntry(name: "events", routes: [], factory: { environment, _ in
        EventsHandler.orUnconfigured { () throws(AuthError) in try EventsHandler.fromEnvironment(environment) }
    }) { (services: AuthServices) throws(AuthError) -> any RequestHandler in
        EventsHandler.orUnconfigured { () throws(AuthError) in
            try services.eventsHandler()
        }
    }

    /// In the order the README lists the handlers. Only tools and tests read it: a handler's
    /// main.swift names its own entry, so its executable links no other handler's composition.
    public static let all = [signin, refresh, linkProvider, signout, sessions, deleteAccount, wellKnown, appleNotifications, otpStart, passkey,
                             mfa, authorizer, events]

    public static func entry(named name: String) -> HandlerEntry? {
        all.first { $0.name == name }
    }
}

/// One handler executable of the catalogue.
public struct HandlerEntry: Sendable {
    public let name: String
    public let routes: [HTTPRoute]
    /// The composition root of this handler: the flows it uses, built from the process's services.
    public let compose: @Sendable (AuthServices) throws(AuthError) -> any RequestHandler

    /// A handler that needs none of the services builds itself from the environment instead.
    let ownFactory: HandlerMain.Factory?

    public init(name: String, routes: [HTTPRoute], factory: HandlerMain.Factory? = nil,
                compose: @escaping @Sendable (AuthServices) throws(AuthError) -> any RequestHandler) {
        self.name = name
        self.routes = routes
        self.ownFactory = factory
        self.compose = compose
    }

    /// What `HandlerMain` runs: secrets, configuration and services from the environment, then
    /// `compose`; once per process under the Runtime API (a failure becomes `/runtime/init/error`),
    /// once per event in stdin mode (the CONFIG_ERROR response); or the entry's own factory.
    public var factory: HandlerMain.Factory {
        ownFactory ?? { [compose] environment, logger in try compose(try AuthServices.start(environment: environment, logger: logger)) }
    }

    /// `{"name", "routes": [{"method", "path", "guarded"}]}`, as `authctl handlers --json` prints it.
    public var json: JSONValue {
        ["name": .string(name), "routes": .array(routes.map(\.json))]
    }
}

/// A route of the template's HTTP API to a handler.
public struct HTTPRoute: Sendable, Hashable, CustomStringConvertible {
    public let method: String
    public let path: String
    /// Whether the template's JWT authorizer checks the access token before the function runs.
    public let guarded: Bool

    public init(method: String, path: String, guarded: Bool) {
        self.method = method
        self.path = path
        self.guarded = guarded
    }

    public static func get(_ path: String, guarded: Bool = false) -> HTTPRoute { HTTPRoute(method: "GET", path: path, guarded: guarded) }
    public static func post(_ path: String, guarded: Bool = false) -> HTTPRoute { HTTPRoute(method: "POST", path: path, guarded: guarded) }
    public static func delete(_ path: String, guarded: Bool = false) -> HTTPRoute { HTTPRoute(method: "DELETE", path: path, guarded: guarded) }

    /// `POST /auth/link guarded`: one line a route, as the template test compares them.
    public var description: String { "\(method) \(path)" + (guarded ? " guarded" : "") }

    public var json: JSONValue { ["method": .string(method), "path": .string(path), "guarded": .bool(guarded)] }
}
