import Logging

/// The first step of a process's composition, before the configuration: the environment's
/// secrets (`AUTH_SECRETS`) resolved (then `AuthServices.start` reads the configuration).
public enum Startup {
    /// `environment` plus what `AUTH_SECRETS` holds; the same environment when it is unset.
    public static func resolvedEnvironment(_ environment: [String: String], logger: Logger,
                                           http: @autoclosure () -> any HTTPClient = CurlHTTPClient()) throws(AuthError) -> [String: String] {
        let reader = EnvironmentReader(environment)
        guard let value = reader.string("AUTH_SECRETS") else { return environment }
        let source = try SecretSource(value)
        let (region, credentials) = try AWSEnvironment.require(reader, for: "AUTH_SECRETS")
        let endpoint = try reader.secureURL("AUTH_SECRETS_ENDPOINT")
        let text = try source.fetch(endpoint: endpoint, region: region, credentials: credentials, http: http())
        let variables = try source.variables(from: text, environment: environment)
        logger.info("secrets read", metadata: ["source": .string(source.label),
                                               "variables": .string(variables.keys.sorted().joined(separator: ","))])
        return environment.merging(variables) { _, secret in secret }
    }
}
