import LambdaAuth
import Logging

/// The web console of contract section 23, on `authctl console` and on serve's dev defaults at
/// `/console`: support staff find a user and act on it in a browser. Every change goes through
/// `AccountAdministration`, the functions `authctl users` calls, so it is revoked, evented and
/// logged as any change; the console writes no item itself. Pages are HTML rendered here, with
/// one small script and one style sheet of its own: nothing comes from outside the binary.
///
/// Access: the URL printed at start carries a random token; its first visit turns it into a
/// cookie (HttpOnly, SameSite=Strict, so another site's page cannot send it) and drops it from
/// the address bar. A request with neither is 401. A change must also come from the console's
/// own origin (the browser's `Origin` header), and `Host` must be loopback's, as serve's rule.
public final class ConsoleApp: Sendable {
    public static let basePath = "/console"

    let administration: AccountAdministration
    let token: String
    let hostNames: Set<String>
    /// The local store's recent events (the `events tail` reader), newest last; nil where there
    /// is no change log to read (DynamoDB: the events handler publishes to EventBridge).
    let recentEvents: @Sendable () throws -> [JSONValue]?
    let logger: Logger

    public init(administration: AccountAdministration, token: String, hostNames: [String] = [],
                recentEvents: @escaping @Sendable () throws -> [JSONValue]?, logger: Logger) {
        self.administration = administration
        self.token = token
        self.hostNames = Set(hostNames.map { $0.lowercased() })
        self.recentEvents = recentEvents
        self.logger = logger
    }

    /// A fresh token: 128 random bits.
    public static func newToken() -> String { SystemRandomSource().identifier(bits: 128) }

    /// The path and query to print for the operator to open.
    public var entryPath: String { ConsoleApp.basePath + "?token=" + token }

    /// The console's answer, or nil for a path outside it (the caller answers those).
    public func respond(_ request: ServeListener.Request) -> ServeListener.Response? {
        let (path, query) = GatewayEvent.split(request.target)
        guard path == ConsoleApp.basePath || path.hasPrefix(ConsoleApp.basePath + "/") else { return nil }
        let host = header(request, "host") ?? ""
        guard LocalHTTPAPI.acceptsHost(host, names: hostNames) else {
            return ConsolePages.message(403, "Forbidden", "The console answers Host localhost or an IP address, not \(host).")
        }
        let parameters = GatewayEvent.queryParameters(query) ?? [:]
        let cookie = cookieName(host: host)
        let presented = parameters["token"] ?? cookieValue(request, cookie)
        guard let presented, ConsoleApp.sameText(presented, token) else {
            return ConsolePages.message(401, "Unauthorized", "Open the console with the URL its command printed (it carries the token).")
        }
        if parameters["token"] != nil {
            // The token leaves the address bar (and history, and any Referer) for the cookie.
            let rest = query.split(separator: "&").filter { !$0.hasPrefix("token=") }.joined(separator: "&")
            return ServeListener.Response(status: 303, headers: [
                ("location", path + (rest.isEmpty ? "" : "?" + rest)),
                ("set-cookie", "\(cookie)=\(token); Path=\(ConsoleApp.basePath); HttpOnly; SameSite=Strict"),
                ("cache-control", "no-store"),
            ])
        }
        if request.method == "POST" {
            // A form posted from elsewhere carries another Origin (SameSite already keeps the cookie from it).
            if let origin = header(request, "origin"), origin != "http://" + host {
                return ConsolePages.message(403, "Forbidden", "A change must come from the console's own page.")
            }
            return act(path: path, form: GatewayEvent.queryParameters(String(decoding: request.body, as: UTF8.self)) ?? [:])
        }
        guard request.method == "GET" else { return ConsolePages.message(405, "Method Not Allowed", "The console takes GET and POST.") }
        switch path {
        case ConsoleApp.basePath, ConsoleApp.basePath + "/": return usersPage(parameters)
        case ConsoleApp.basePath + "/user": return userPage(parameters["id"] ?? "", notice: parameters["notice"].flatMap(Notice.init(rawValue:)))
        case ConsoleApp.basePath + "/events": return eventsPage()
        case ConsoleApp.basePath + "/console.js":
            return ServeListener.Response(status: 200, headers: [("content-type", "text/javascript; charset=utf-8"), ("cache-control", "no-store")],
                                          body: Array(ConsolePages.script.utf8))
        default: return ConsolePages.message(404, "Not Found", "No such console page.")
        }
    }

    /// What a change's redirect tells the page to say.
    enum Notice: String {
        case sessionRevoked = "session-revoked", passkeyDeleted = "passkey-deleted", secondFactorReset = "mfa-reset"
        case noSecondFactor = "no-mfa", metadataSaved = "metadata-saved", userDeleted = "user-deleted"

        var text: String {
            switch self {
            case .sessionRevoked: "Session revoked: its refresh tokens no longer work."
            case .passkeyDeleted: "Passkey deleted."
            case .secondFactorReset: "Second factor removed: the user signs in with one factor until enrolling again."
            case .noSecondFactor: "The user had no second factor."
            case .metadataSaved: "App metadata saved: the next access token carries it."
            case .userDeleted: "User deleted."
            }
        }
    }

    func act(path: String, form: [String: String]) -> ServeListener.Response {
        let userID = form["id"] ?? ""
        let action = String(path.dropFirst((ConsoleApp.basePath + "/user/").count))
        guard path.hasPrefix(ConsoleApp.basePath + "/user/"), !userID.isEmpty else {
            return ConsolePages.message(404, "Not Found", "No such console action.")
        }
        let notice: Notice
        do throws(AuthError) {
            switch action {
            case "revoke-session":
                switch try administration.revokeSession(userID, sessionID: form["session"] ?? "", logger: logger) {
                case nil: return noSuchUser(userID)
                case false?: throw AuthError(.sessionNotFound, "that session is not one of the user's active sessions")
                case true?: notice = .sessionRevoked
                }
            case "delete-passkey":
                switch try administration.deletePasskey(userID, passkeyID: form["passkey"] ?? "", logger: logger) {
                case nil: return noSuchUser(userID)
                case false?: throw AuthError(.passkeyNotFound, "the user has no such passkey")
                case true?: notice = .passkeyDeleted
                }
            case "reset-mfa":
                guard let removed = try administration.resetSecondFactor(userID, logger: logger) else { return noSuchUser(userID) }
                notice = removed ? .secondFactorReset : .noSecondFactor
            case "metadata":
                guard try administration.setAppMetadata(userID, json: form["metadata"] ?? "") != nil else { return noSuchUser(userID) }
                logger.notice("app metadata set by an operator", metadata: ["userId": .string(userID)])
                notice = .metadataSaved
            case "delete":
                guard try administration.deleteUser(userID, logger: logger) else { return noSuchUser(userID) }
                logger.notice("user deleted by an operator", metadata: ["userId": .string(userID)])
                return redirect(ConsoleApp.basePath + "?notice=" + Notice.userDeleted.rawValue)
            default:
                return ConsolePages.message(404, "Not Found", "No such console action.")
            }
        } catch {
            return userPage(userID, notice: nil, refusal: error)
        }
        return redirect(ConsoleApp.basePath + "/user?id=" + HTMLText.urlEncoded(userID) + "&notice=" + notice.rawValue)
    }

    func usersPage(_ parameters: [String: String]) -> ServeListener.Response {
        let query = parameters["q"] ?? ""
        do throws(AuthError) {
            let notice = parameters["notice"].flatMap(Notice.init(rawValue:))?.text
            if !query.isEmpty {
                return ConsolePages.users(query: query, users: try administration.findUsers(query), next: nil, notice: notice)
            }
            let page = try administration.listUsers(limit: 25, after: parameters["after"])
            return ConsolePages.users(query: "", users: page.users, next: page.next, notice: notice)
        } catch {
            return ConsolePages.message(error.status, "The store refused", error.description)
        }
    }

    func userPage(_ userID: String, notice: Notice?, refusal: AuthError? = nil) -> ServeListener.Response {
        do throws(AuthError) {
            guard let description = try administration.describeUser(userID), description["user"] != nil else { return noSuchUser(userID) }
            let passkeys = try administration.describePasskeys(userID)?["passkeys"]?.arrayValue ?? []
            let secondFactor = try administration.hasSecondFactor(userID) ?? false
            var response = ConsolePages.user(description, passkeys: passkeys, secondFactor: secondFactor, notice: notice?.text,
                                             refusal: refusal?.description)
            if let refusal { response.status = refusal.status }
            return response
        } catch {
            return ConsolePages.message(error.status, "The store refused", error.description)
        }
    }

    func eventsPage() -> ServeListener.Response {
        do {
            guard let events = try recentEvents() else {
                return ConsolePages.events(nil)
            }
            return ConsolePages.events(Array(events.suffix(100).reversed()))
        } catch {
            return ConsolePages.message(500, "The change log could not be read", String(describing: error))
        }
    }

    func noSuchUser(_ userID: String) -> ServeListener.Response {
        ConsolePages.message(404, "No such user", "There is no user \(userID).")
    }

    func redirect(_ location: String) -> ServeListener.Response {
        ServeListener.Response(status: 303, headers: [("location", location), ("cache-control", "no-store")])
    }

    func header(_ request: ServeListener.Request, _ name: String) -> String? {
        request.headers.last { $0.name.lowercased() == name }?.value
    }

    /// One cookie per port: a browser keeps cookies per host, and serve's console and
    /// `authctl console` on another port each have their own token.
    func cookieName(host: String) -> String {
        let port = host.split(separator: ":").last.flatMap { UInt16($0) }.map(String.init) ?? "80"
        return "lambda_auth_console_" + port
    }

    func cookieValue(_ request: ServeListener.Request, _ name: String) -> String? {
        for header in request.headers where header.name.lowercased() == "cookie" {
            for pair in header.value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingPrefix(" ") }
                if parts.count == 2, parts[0] == name { return String(parts[1]) }
            }
        }
        return nil
    }

    /// Compares every byte whatever the first difference, so the time taken tells nothing of the token.
    static func sameText(_ presented: String, _ expected: String) -> Bool {
        let left = Array(presented.utf8), right = Array(expected.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
