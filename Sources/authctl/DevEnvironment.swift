import LambdaAuth
import LambdaAuthTooling
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The embedded defaults that let every sample run offline on a fresh clone: the dev identity
/// provider stands in for Google and Apple (its JWKS file is both providers' key set), with
/// demo client ids. They apply to `authctl invoke`, `demo` and `replay` only, never to the
/// handlers themselves, and each can be overridden by setting the variable.
struct DevEnvironment {
    static let googleAudiences = ["demo-web.apps.googleusercontent.com", "demo-ios.apps.googleusercontent.com",
                                  "demo-android.apps.googleusercontent.com"]
    static let appleAudiences = ["com.example.demo", "com.example.demo.web"]

    /// Holds the dev identity provider's key and JWKS, the JWKS cache and the tokens last issued.
    let directory: String
    let identityProvider: DevIdentityProvider
    let binDirectory: String

    init(directory: String, binDirectory: String = FileSystem.parentDirectory(of: ProcessRunner.currentExecutable)) throws {
        self.directory = directory
        self.binDirectory = binDirectory
        identityProvider = try DevIdentityProvider.initialize(directory: directory).provider
    }

    /// The handlers' environment: the caller's, completed with the embedded defaults.
    func handlerEnvironment(_ base: [String: String]) -> [String: String] {
        var environment = base
        let jwksURL = "file://" + absolutePath(DevIdentityProvider.jwksPath(in: directory))
        let defaults = [
            "AUTH_GOOGLE_AUDIENCES": DevEnvironment.googleAudiences.joined(separator: ","),
            "AUTH_APPLE_AUDIENCES": DevEnvironment.appleAudiences.joined(separator: ","),
            "AUTH_GOOGLE_JWKS_URL": jwksURL,
            "AUTH_APPLE_JWKS_URL": jwksURL,
            "AUTH_CACHE_DIR": absolutePath(directory + "/cache"),
        ]
        for (name, value) in defaults where (environment[name] ?? "").isEmpty { environment[name] = value }
        return environment
    }

    /// Runs one handler executable on one event, as Lambda's stdin mode does.
    func invoke(_ handler: String, event: JSONValue, environment: [String: String]) throws -> Invocation {
        let executable = binDirectory + "/" + handler
        guard FileSystem.exists(executable) else {
            throw CommandFailure("no \(handler) executable in \(binDirectory); run `swift build` first")
        }
        let output = try ProcessRunner.run(executable, environment: environment, stdin: event.serializedBytes())
        return Invocation(exitCode: output.exitCode, document: output.json, log: output.stderrText)
    }

    struct Invocation {
        var exitCode: Int32
        /// What the handler printed: the body for direct events, the HTTP envelope otherwise.
        var document: JSONValue?
        var log: String

        /// Status and body, whatever the event kind.
        var status: Int? {
            if let code = document?["statusCode"]?.int64Value { return Int(code) }
            if let status = document?["error"]?["status"]?.int64Value { return Int(status) }
            return document == nil ? nil : 200
        }

        var body: JSONValue? {
            if let text = document?["statusCode"] != nil ? document?["body"]?.stringValue : nil {
                return try? JSONValue.parse(text)
            }
            return document
        }
    }
}

/// `{{idToken PROVIDER key=value ...}}` placeholders: minted by the dev identity provider at
/// the given clock. Keys: sub, email, emailVerified, privateEmail, name, picture, aud, nonce,
/// expiresIn, iat; for a configured provider (a replayed scenario's `oidcIssuers`) also tid, alg
/// and iss (see `DevOIDCIssuers`). `{{signingKey NAME [alg=RS256|ES256]}}`: the PEM of an access-token
/// key made for this run under that name (the same key wherever the name appears; RSA unless its
/// first appearance says ES256), for rotation scenarios.
struct PlaceholderFiller {
    let environment: DevEnvironment
    let now: Int64
    let saved: [String: String]
    var signingKeys = NamedSigningKeys()
    /// A replayed scenario's dev Apple server, for `{{appleCode …}}`.
    var appleServer: DevAppleBackChannel? = nil
    /// The outbox `{{emailCode ADDRESS}}` reads (AUTH_EMAIL_SENDER=outbox:DIR), if any.
    var outbox: String? = nil
    /// A replayed scenario's stand-ins for configured providers' issuers (`{{oidcIssuer NAME}}`),
    /// and the step's AUTH_OIDC_PROVIDERS, whose entries shape `{{idToken NAME …}}`.
    var oidcIssuers: DevOIDCIssuers? = nil
    var oidcConfiguration: String? = nil
    /// A replay's software authenticators, for `{{passkeyRegistration …}}` and `{{passkeyAssertion …}}`.
    var passkeys = NamedPasskeyAuthenticators()
    /// A replayed scenario's stand-in for the app's hook endpoint (`{{hookServer}}`).
    var hookServer: DevHookServer? = nil

    func fill(_ value: JSONValue) throws -> JSONValue {
        switch value {
        case .string(let text):
            // A passkey credential is an object: its placeholder stands for the whole value.
            if text.hasPrefix("{{"), text.hasSuffix("}}"), text.utf8.count > 4,
               let words = try? PlaceholderFiller.split(String(text.dropFirst(2).dropLast(2))),
               let head = words.first, PlaceholderFiller.passkeyPlaceholders.contains(head) {
                return try passkeyCredential(words)
            }
            // An HTTP event's body is JSON text: fill the placeholders inside it as JSON values.
            if text.hasPrefix("{"), let body = try? JSONValue.parse(text) { return .string(try fill(body).serialized()) }
            return .string(try fill(text))
        case .array(let elements): return .array(try elements.map(fill))
        case .object(let members): return .object(try members.mapValues(fill))
        default: return value
        }
    }

    func fill(_ text: String) throws -> String {
        var output = ""
        var rest = Substring(text)
        while let open = rest.firstRange(of: "{{") {
            output += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstRange(of: "}}") else {
                throw CommandFailure("unterminated placeholder in \(text)")
            }
            output += try resolve(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return output + rest
    }

    func resolve(_ placeholder: String) throws -> String {
        let words = try PlaceholderFiller.split(placeholder)
        guard let head = words.first else { throw CommandFailure("empty placeholder") }
        if head.hasPrefix("$") {
            guard let value = saved[String(head.dropFirst())] else {
                throw CommandFailure("no saved value \(head) (saved: \(saved.keys.sorted().joined(separator: ", ")))")
            }
            return value
        }
        if head == "signingKey", words.count == 2 || words.count == 3 {
            var algorithm = JWSAlgorithm.rs256
            if words.count == 3 {
                let options = try PlaceholderFiller.options(words.dropFirst(2))
                guard let name = options["alg"], let chosen = JWSAlgorithm(rawValue: name), AccessTokenCheck.algorithms.contains(chosen),
                      options.count == 1 else {
                    throw CommandFailure("{{signingKey NAME alg=RS256|ES256}}: unknown option in {{\(placeholder)}}")
                }
                algorithm = chosen
            }
            return signingKeys.key(named: words[1], algorithm: algorithm).pemRepresentation
        }
        if head == "dataKey", words.count == 2 { return try dataKey(named: words[1]) }
        if head == "totpCode" || head == "wrongTotpCode", words.count == 2 || words.count == 3 {
            // What the user's authenticator app shows at this step's clock (`offset=SECONDS` moves
            // it): the TOTP code of a base32 secret, usually a `$saved` one from totp-enroll.
            let secret = words[1].hasPrefix("$") ? saved[String(words[1].dropFirst())] : words[1]
            let options = try PlaceholderFiller.options(words.dropFirst(2))
            let offset = words.count == 3 ? options["offset"].flatMap { Int64($0) } : 0
            guard let secret, let offset, let code = AuthenticatorApp.code(base32Secret: secret, at: now + offset) else {
                throw CommandFailure("{{\(placeholder)}}: needs a base32 secret (or a $saved one) and at most offset=SECONDS")
            }
            return head == "totpCode" ? code : (code == "000000" ? "000001" : "000000")
        }
        if head == "hookServer", words.count == 1 {
            guard let hookServer else { throw CommandFailure("{{hookServer}} needs the scenario's \"hookServer\": true") }
            return hookServer.url
        }
        if head == "oidcIssuer", words.count == 2 {
            guard let oidcIssuers else { throw CommandFailure("{{oidcIssuer \(words[1])}} needs the scenario's oidcIssuers") }
            return try oidcIssuers.baseURL(of: words[1])
        }
        if head == "appleCode" || head == "appleNotification" {
            let options = try PlaceholderFiller.options(words.dropFirst())
            return head == "appleCode" ? try appleCode(options) : try appleNotification(options)
        }
        if head == "emailCode" || head == "wrongEmailCode", words.count == 2 {
            // The code a user would read in their mailbox: the newest message to the address in
            // the outbox (test and development only). `wrongEmailCode` is any other six digits.
            guard let outbox, let code = Outbox.latestCode(to: words[1], in: outbox) else {
                throw CommandFailure("no code sent to \(words[1]) in the outbox")
            }
            return head == "emailCode" ? code : (code == "000000" ? "000001" : "000000")
        }
        guard head == "idToken", words.count >= 2 else {
            throw CommandFailure("unknown placeholder {{\(placeholder)}}; expected {{idToken google|apple|CONFIGURED key=value...}}, {{oidcIssuer NAME}}, {{hookServer}}, {{appleCode key=value...}}, {{appleNotification key=value...}}, {{emailCode ADDRESS}}, {{wrongEmailCode ADDRESS}}, {{totpCode SECRET [offset=SECONDS]}}, {{wrongTotpCode SECRET}}, {{signingKey NAME [alg=RS256|ES256]}}, {{passkeyRegistration NAME challenge=… handle=…}}, {{passkeyAssertion NAME challenge=…}} (a whole string) or {{$name}}")
        }
        let options = try PlaceholderFiller.options(words.dropFirst(2))
        guard ProviderName.idTokenProviders.contains(where: { $0.rawValue == words[1] }) else {
            return try configuredProviderToken(words[1], options: options)
        }
        let provider = try ProviderName.parse(words[1])
        let audiences = provider == .google ? DevEnvironment.googleAudiences : DevEnvironment.appleAudiences
        return try environment.identityProvider.mintToken(provider: provider, options: options, defaultAudience: audiences[0], now: now)
    }

    static func options(_ words: ArraySlice<String>) throws -> [String: String] {
        var options: [String: String] = [:]
        for word in words {
            guard let equals = word.firstIndex(of: "=") else { throw CommandFailure("placeholder option \(word) needs key=value") }
            options[String(word[..<equals])] = String(word[word.index(after: equals)...])
        }
        return options
    }

    /// Splits on spaces, keeping "quoted values" together.
    static func split(_ text: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            if character == "\"" { quoted.toggle(); continue }
            if character == " ", !quoted {
                if !current.isEmpty { words.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if quoted { throw CommandFailure("unbalanced quotes in {{\(text)}}") }
        if !current.isEmpty { words.append(current) }
        return words
    }
}

/// Access-token keys made on first mention, by name, for one replay.
final class NamedSigningKeys: Sendable {
    private let keys = Mutex<[String: AccessTokenKey]>([:])

    /// The key first made for `name` (RSA unless the first use asked for another algorithm).
    func key(named name: String, algorithm: JWSAlgorithm = .rs256) -> AccessTokenKey {
        keys.withLock { keys in
            if let key = keys[name] { return key }
            let key = AccessTokenKey.generate(algorithm)
            keys[name] = key
            return key
        }
    }
}
