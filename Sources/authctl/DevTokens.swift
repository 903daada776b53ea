import LambdaAuth
import LambdaAuthTooling

extension DevIdentityProvider {
    /// Mints a token from placeholder options (`sub=… email=… aud=… nonce=… name=… picture=…
    /// emailVerified=false privateEmail=true expiresIn=SECONDS iat=EPOCH|+SECONDS|-SECONDS`).
    func mintToken(provider: ProviderName, options: [String: String], defaultAudience: String, now: Int64) throws -> String {
        let token = try DevIdentityProvider.tokenOptions(options, defaultAudience: defaultAudience, now: now)
        do {
            return try self.token(claims: token.claims(for: provider, now: now), provider: provider)
        } catch {
            throw CommandFailure("cannot mint a dev token: \(error)")
        }
    }

    /// What the placeholder options say a token carries, whichever provider signs it; `alsoKnown`:
    /// the options the caller has already taken out (named when an option is unknown).
    static func tokenOptions(_ options: [String: String], alsoKnown: Set<String> = [], defaultAudience: String, now: Int64) throws -> DevTokenOptions {
        let known: Set = ["sub", "aud", "email", "emailVerified", "privateEmail", "nonce", "name", "picture", "expiresIn", "iat"]
        if let unknown = options.keys.first(where: { !known.contains($0) }) {
            throw CommandFailure("unknown token option \(unknown); known: \(known.union(alsoKnown).sorted().joined(separator: ", "))")
        }
        var token = DevTokenOptions(subject: options["sub"] ?? "dev-user-1", audience: options["aud"] ?? defaultAudience)
        token.email = options["email"]
        token.emailVerified = options["emailVerified"] != "false"
        token.privateEmail = options["privateEmail"] == "true"
        token.nonce = options["nonce"]
        token.name = options["name"]
        token.picture = options["picture"]
        if let text = options["expiresIn"] {
            guard let seconds = Int64(text) else { throw CommandFailure("expiresIn must be a number of seconds") }
            token.expiresIn = seconds
        }
        if let text = options["iat"] {
            guard let value = Int64(text) else { throw CommandFailure("iat must be epoch seconds or +/- seconds from now") }
            token.issuedAt = text.hasPrefix("+") || text.hasPrefix("-") ? now + value : value
        }
        return token
    }
}
