#if canImport(Glibc)
import Glibc
#endif

/// What `authctl serve` runs on. The dev identity provider signs anyone in as anyone, so it (and
/// every other dev default) is only ever on where nothing is real: a local store of its own and
/// the dev signing key kept inside it. Otherwise a dev "Google" token carrying a user's address
/// would join that user's account, with tokens that the deployed handlers accept.
public enum ServeMode: Equatable, Sendable {
    /// The dev defaults on the local store at `store`.
    case dev(store: String)
    /// The environment as given: no dev route, no dev default.
    case configured(reason: String)

    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
    }

    /// `explicitDev`: `--dev`, which asks for the dev defaults and refuses anything real.
    /// Without it they apply only when no provider is configured and nothing names real data.
    public static func choose(environment: [String: String], devDirectory: String, explicitDev: Bool) throws(Refusal) -> ServeMode {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let devStore = devDirectory + "/store"
        let store = value("AUTH_STORE")
        var real: [String] = []
        if let store, store.hasPrefix("dynamodb:") { real.append("a DynamoDB store (AUTH_STORE=\(store))") }
        if value("AUTH_SECRETS") != nil { real.append("AUTH_SECRETS") }
        // The dev key is the one the dev store keeps; any key given is someone's real one.
        if let key = ["AUTH_SIGNING_KEYS", "AUTH_SIGNING_KEYS_FILE", "AUTH_SIGNING_KEY", "AUTH_SIGNING_KEY_FILE"].first(where: { value($0) != nil }) {
            real.append("a signing key that is not the dev one (\(key))")
        }
        if explicitDev {
            guard real.isEmpty else {
                throw Refusal(description: "--dev runs the dev identity provider, which signs anyone in, so it refuses "
                                           + real.joined(separator: ", ") + "; unset it, or drop --dev")
            }
            return .dev(store: store ?? devStore)
        }
        if let provider = ["AUTH_GOOGLE_AUDIENCES", "AUTH_APPLE_AUDIENCES", "AUTH_OIDC_PROVIDERS"].first(where: { value($0) != nil }) {
            return .configured(reason: "\(provider) is set")
        }
        if let store, !store.hasPrefix("dynamodb:"), absolutePath(store) != absolutePath(devStore) {
            real.append("a store other than the dev one (AUTH_STORE=\(store))")
        }
        guard real.isEmpty else { return .configured(reason: real.joined(separator: ", ") + " (--dev for the dev defaults on a local store)") }
        return .dev(store: store ?? devStore)
    }
}

/// `path` from the current directory (and without a trailing slash), for the file:// URLs printed
/// and handed to the handlers, and for telling whether two spellings name one directory.
public func absolutePath(_ path: String) -> String {
    var path = path
    while path.count > 1, path.hasSuffix("/") { path.removeLast() }
    while path.hasPrefix("./") { path.removeFirst(2) }
    if path.hasPrefix("/") { return path }
    var buffer = [CChar](repeating: 0, count: 4096)
    guard getcwd(&buffer, buffer.count) != nil else { return path }
    let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return path == "." ? cwd : cwd + "/" + path
}
