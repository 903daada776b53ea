import Logging

/// The composition of a handler process, outside the Lambda layer: the environment's secrets
/// (`AUTH_SECRETS`) resolved, then the configuration, then the services, then the handler.
/// Every main.swift is `HandlerMain.run(HandlerCatalogue.<its entry>)`, whose factory is this one.
public enum Startup {
    /// A factory for `HandlerMain`: runs once per process under the Runtime API (a failure
    /// becomes `/runtime/init/error`), once per event in stdin mode (the CONFIG_ERROR response).
    public static func handler(
        _ make: @escaping @Sendable (AuthServices) throws(AuthError) -> any RequestHandler
    ) -> HandlerMain.Factory {
        { environment, logger in
            try make(try AuthServices.start(environment: environment, logger: logger))
        }
    }

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

extension AuthServices {
    /// Secrets, configuration and services from a process environment.
    public static func start(environment: [String: String], logger: Logger) throws(AuthError) -> AuthServices {
        // One HTTP client for the process: the secret's request and every later one share it.
        let http = CurlHTTPClient()
        let resolved = try Startup.resolvedEnvironment(environment, logger: logger, http: http)
        return try AuthServices(configuration: try AuthConfiguration.fromEnvironment(resolved), logger: logger, httpClient: http)
    }
}
