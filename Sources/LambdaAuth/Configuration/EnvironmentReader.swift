/// Reads typed values; an empty variable counts as unset.
struct EnvironmentReader {
    let environment: [String: String]
    init(_ environment: [String: String]) { self.environment = environment }

    func string(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    func list(_ name: String) -> [String] {
        (string(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
    }

    func bool(_ name: String) throws(AuthError) -> Bool? {
        guard let value = string(name) else { return nil }
        switch value.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw AuthConfiguration.configError(name, "must be true or false")
        }
    }

    func integer(_ name: String, in range: ClosedRange<Int64>) throws(AuthError) -> Int64? {
        guard let value = string(name) else { return nil }
        guard let number = Int64(value), range.contains(number) else {
            throw AuthConfiguration.configError(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    // The `into:` forms leave `value` alone when the variable is unset, so that a setting's
    // default is written once, where the setting is declared.

    func integer(_ name: String, in range: ClosedRange<Int64>, into value: inout Int64) throws(AuthError) {
        if let number = try integer(name, in: range) { value = number }
    }

    func integer(_ name: String, in range: ClosedRange<Int64>, into value: inout Int) throws(AuthError) {
        if let number = try integer(name, in: range) { value = Int(number) }
    }

    func bool(_ name: String, into value: inout Bool) throws(AuthError) {
        if let flag = try bool(name) { value = flag }
    }

    func onOff(_ name: String, into value: inout Bool) throws(AuthError) {
        if let flag = try onOff(name) { value = flag }
    }

    /// One of `Choice`'s raw values (AUTH_LINK_BY_EMAIL, AUTH_CREDENTIALS, AUTH_METRICS); any other is `problem`.
    func choice<Choice: RawRepresentable<String>>(_ name: String, _ problem: String, into value: inout Choice) throws(AuthError) {
        guard let text = string(name) else { return }
        guard let choice = Choice(rawValue: text) else { throw AuthConfiguration.configError(name, problem) }
        value = choice
    }

    /// A switch (AUTH_GUEST, AUTH_EMAIL): `on` or `off`, in any case.
    func onOff(_ name: String) throws(AuthError) -> Bool? {
        guard let value = string(name) else { return nil }
        switch value.lowercased() {
        case "on": return true
        case "off": return false
        default: throw AuthConfiguration.configError(name, "must be on or off")
        }
    }

    /// An https:// URL, or http:// to a loopback address only: what secrets, email codes and
    /// Apple's tokens travel to, never in the clear across a network.
    func secureURL(_ name: String) throws(AuthError) -> String? {
        guard let value = string(name) else { return nil }
        if value.hasPrefix("http://") {
            guard JWKSLocation.isLoopback(value) else {
                throw AuthConfiguration.configError(name, "may use http:// only for a loopback address")
            }
        } else if !value.hasPrefix("https://") || value.count == "https://".count {
            throw AuthConfiguration.configError(name, "must be an https:// URL, or http:// to a loopback address")
        }
        return value
    }

    func url(_ name: String) throws(AuthError) -> String? {
        guard let value = string(name) else { return nil }
        guard value.hasPrefix("http://") || value.hasPrefix("https://") else {
            throw AuthConfiguration.configError(name, "must be an http:// or https:// URL")
        }
        return value
    }
}
