/// The three hooks of contract section 19, by the names `AUTH_HOOKS` keys them with.
public enum HookType: String, CaseIterable, Sendable, Hashable {
    /// Asked before any new user is written: may refuse the sign-up.
    case beforeUserCreated
    /// Asked on every sign-in of an existing user before its session opens: may refuse it.
    case beforeSignIn
    /// Asked for every access token issued: may add top-level claims to it.
    case accessTokenClaims
}

/// One configured hook: where it is called, how long it may take, and what its failure means.
public struct HookSettings: Sendable, Equatable {
    public enum Target: Sendable, Equatable {
        /// A Standard Webhooks POST: https://, or http:// to a loopback address.
        case url(String)
        /// A function name or ARN, called through Lambda's Invoke API.
        case lambda(String)
    }

    /// What a hook that cannot answer usefully (timeout, refused connection, non-200, malformed
    /// answer, reserved claim, function error) means for the request.
    public enum ErrorPolicy: String, Sendable {
        /// 503 HOOK_UNAVAILABLE, nothing written: the safe default for a hook that guards sign-ups.
        case deny
        /// On as if allowed, with no added claims.
        case allow
    }

    public var target: Target
    public var timeoutMilliseconds: Int64 = 2000
    public var onError: ErrorPolicy = .deny

    public init(target: Target, timeoutMilliseconds: Int64 = 2000, onError: ErrorPolicy = .deny) {
        self.target = target
        self.timeoutMilliseconds = timeoutMilliseconds
        self.onError = onError
    }

    /// The allowed range of `timeoutMs`: long enough for a cold Lambda's answer, short enough that
    /// the three hooks of one sign-in still fit API Gateway's 30 s.
    public static let timeoutRange: ClosedRange<Int64> = 100...5000
}

/// `AUTH_HOOKS` (a JSON object) or `AUTH_HOOKS_FILE` (the path of one): every mistake is a
/// CONFIG_ERROR naming the variable, the hook and the field, so that a deployment fails at start
/// rather than refusing sign-ins later.
enum HookConfiguration {
    static let variables = ["AUTH_HOOKS", "AUTH_HOOKS_FILE"]

    static func fromEnvironment(_ reader: EnvironmentReader) throws(AuthError) -> [HookType: HookSettings] {
        let set = variables.filter { reader.string($0) != nil }
        guard let variable = set.first else { return [:] }
        guard set.count == 1 else {
            throw AuthConfiguration.configError("AUTH_HOOKS and AUTH_HOOKS_FILE", "are both set; set only one")
        }
        var text = reader.string(variable)!
        if variable == "AUTH_HOOKS_FILE" {
            do {
                text = String(decoding: try FileSystem.readFile(text, limit: 64 << 10), as: UTF8.self)
            } catch {
                throw AuthConfiguration.configError(variable, "cannot be read (\(error))")
            }
        }
        return try parse(text, variable: variable)
    }

    static func parse(_ text: String, variable: String) throws(AuthError) -> [HookType: HookSettings] {
        guard let document = try? JSONValue.parse(text), let members = document.objectValue else {
            throw AuthConfiguration.configError(variable, "must be a JSON object whose keys are hooks (\(hookNames))")
        }
        var hooks: [HookType: HookSettings] = [:]
        for (name, value) in members {
            guard let type = HookType(rawValue: name) else {
                throw AuthConfiguration.configError(variable, "names \(quoted(name)), which is not a hook (\(hookNames))")
            }
            hooks[type] = try settings(value, variable: variable, hook: type)
        }
        return hooks
    }

    static func settings(_ value: JSONValue, variable: String, hook: HookType) throws(AuthError) -> HookSettings {
        func problem(_ field: String, _ text: String) -> AuthError {
            AuthConfiguration.configError(variable, "\(hook.rawValue).\(field) \(text)")
        }
        guard let fields = value.objectValue else {
            throw AuthConfiguration.configError(variable, "\(hook.rawValue) must be an object: {\"url\": …} or {\"lambda\": …}")
        }
        for name in fields.keys where !["url", "lambda", "timeoutMs", "onError"].contains(name) {
            throw problem(quoted(name), "is not a field of a hook (url, lambda, timeoutMs, onError)")
        }
        let target: HookSettings.Target
        switch (fields["url"], fields["lambda"]) {
        case (.some(let url), .none):
            guard let url = url.stringValue, isAcceptedURL(url) else {
                throw problem("url", "must be an https:// URL, or http:// to a loopback address")
            }
            target = .url(url)
        case (.none, .some(let function)):
            guard let function = function.stringValue, isFunctionName(function) else {
                throw problem("lambda", "must be a function name or ARN (letters, digits, - _ : $, at most 170 characters)")
            }
            target = .lambda(function)
        case (.none, .none):
            throw problem("url", "or lambda is required")
        case (.some, .some):
            throw problem("url", "and lambda are both set; a hook is one or the other")
        }
        var settings = HookSettings(target: target)
        if let timeout = fields["timeoutMs"] {
            guard let milliseconds = timeout.int64Value, HookSettings.timeoutRange.contains(milliseconds) else {
                throw problem("timeoutMs", "must be a whole number from 100 to 5000")
            }
            settings.timeoutMilliseconds = milliseconds
        }
        if let policy = fields["onError"] {
            guard let name = policy.stringValue, let chosen = HookSettings.ErrorPolicy(rawValue: name) else {
                throw problem("onError", "must be \"deny\" or \"allow\"")
            }
            settings.onError = chosen
        }
        return settings
    }

    /// What `AUTH_EVENTS_WEBHOOK` accepts too: never a payload in the clear across a network.
    static func isAcceptedURL(_ url: String) -> Bool {
        if url.hasPrefix("http://") { return JWKSLocation.isLoopback(url) }
        return url.hasPrefix("https://") && url.count > "https://".count
            && !url.utf8.contains { $0 <= 0x20 || $0 == 0x7F }
    }

    /// Lambda's own rule for what `FunctionName` takes in the Invoke API: a name, a partial or a
    /// whole ARN, with an optional version or alias.
    static func isFunctionName(_ name: String) -> Bool {
        (1...170).contains(name.utf8.count) && name.utf8.allSatisfy { $0.isASCIIAlphanumeric(or: "-_:$") }
    }

    static var hookNames: String { HookType.allCases.map(\.rawValue).joined(separator: ", ") }

    /// A name from the document, shown without letting it break the message.
    static func quoted(_ name: String) -> String {
        JSONValue.string(String(name.prefix(40))).serialized()
    }
}
