import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// `authctl dev-idp …`: a local identity provider, so that sign-in runs offline against
/// `AUTH_GOOGLE_JWKS_URL=file://…/.auth-dev/jwks.json`.
enum DevIDPCommands {
    static var all: [Command] {
        [
            Command(path: ["dev-idp", "init"], usage: "dev-idp init [--dir D]",
                    summary: "create the dev identity provider's RSA key (kept if it exists) and write its JWKS file",
                    run: initialize),
            Command(path: ["dev-idp", "jwks"], usage: "dev-idp jwks [--dir D]",
                    summary: "print the dev identity provider's JWKS",
                    run: printJWKS),
            Command(path: ["dev-idp", "token"],
                    usage: "dev-idp token --provider google|apple --sub S [--email E] [--email-verified true|false] [--aud A] "
                        + "[--nonce N] [--expires-in S] [--name N] [--picture URL] [--private-email] [--iat T] [--dir D]",
                    summary: "print a Google- or Apple-shaped ID token signed with the dev key (--aud defaults to the "
                        + "provider's first configured audience; Apple tokens carry no name, as Apple's never do)",
                    run: mintToken),
        ]
    }

    static func directory(_ arguments: inout Arguments) throws -> String {
        try arguments.option("dir") ?? DevIdentityProvider.defaultDirectory
    }

    static func initialize(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let directory = try directory(&arguments)
        try arguments.finish()
        let (provider, created) = try DevIdentityProvider.initialize(directory: directory)
        let jwksPath = absolutePath(DevIdentityProvider.jwksPath(in: directory))
        print(created ? "created a dev RSA-2048 key in \(directory)/\(DevIdentityProvider.keyFileName) (kid \(provider.keyID))"
                      : "kept the existing dev key in \(directory)/\(DevIdentityProvider.keyFileName) (kid \(provider.keyID))")
        print("wrote its JWKS to \(jwksPath); point the verifier at it:")
        print("  export AUTH_GOOGLE_JWKS_URL=file://\(jwksPath) AUTH_APPLE_JWKS_URL=file://\(jwksPath)")
    }

    static func printJWKS(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let directory = try directory(&arguments)
        try arguments.finish()
        print(try DevIdentityProvider.load(directory: directory).jwks.serialized())
    }

    static func mintToken(_ arguments: inout Arguments, _ context: AuthCtlContext) throws {
        let directory = try directory(&arguments)
        guard let providerName = try arguments.option("provider") else {
            throw CommandFailure("--provider google|apple is required", exitCode: 2)
        }
        let provider = try ProviderName.parse(providerName)
        guard let subject = try arguments.option("sub"), !subject.isEmpty else {
            throw CommandFailure("--sub is required", exitCode: 2)
        }
        let configuration = try context.configuration()
        let audience = try arguments.option("aud") ?? configuration.provider(provider).audiences.first
        guard let audience else {
            throw CommandFailure("--aud is required when AUTH_\(provider.rawValue.uppercased())_AUDIENCES is not set", exitCode: 2)
        }
        var options = DevTokenOptions(subject: subject, audience: audience)
        options.email = try arguments.option("email")
        if let verified = try arguments.option("email-verified") {
            guard verified == "true" || verified == "false" else {
                throw CommandFailure("--email-verified must be true or false", exitCode: 2)
            }
            options.emailVerified = verified == "true"
        }
        options.nonce = try arguments.option("nonce")
        options.name = try arguments.option("name")
        options.picture = try arguments.option("picture")
        options.privateEmail = arguments.flag("private-email")
        if let expiresIn = try arguments.option("expires-in") {
            // Negative values are allowed: an expired token is a useful thing to test with.
            guard let seconds = Int64(expiresIn) else { throw CommandFailure("--expires-in must be whole seconds", exitCode: 2) }
            options.expiresIn = seconds
        }
        if let issuedAt = try arguments.option("iat") {
            guard let instant = Int64(issuedAt) ?? ISO8601.parse(issuedAt).map({ Int64($0.rounded(.down)) }) else {
                throw CommandFailure("--iat must be epoch seconds or ISO-8601", exitCode: 2)
            }
            options.issuedAt = instant
        }
        try arguments.finish()
        let identityProvider = try DevIdentityProvider.load(directory: directory)
        print(try identityProvider.token(claims: options.claims(for: provider, now: configuration.clock.nowSeconds),
                                         provider: provider))
    }

    static func absolutePath(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return cwd + "/" + path
    }
}
