import Logging

/// What the Lambda layer itself reads from the environment, before any handler exists: how much
/// to log, whether to write metrics and whether the test hooks are on. Invalid values are CONFIG_ERRORs, as everywhere.
public struct LambdaSettings: Sendable {
    public var logLevel: Logger.Level = .info
    public var testMode = false
    /// `AUTH_METRICS`: one Embedded Metric Format line per request, or none.
    public var metrics = EmbeddedMetrics.Mode.off
    /// `AUTH_METRICS_NAMESPACE`.
    public var metricsNamespace = EmbeddedMetrics.defaultNamespace
    /// `AUTH_CORS_ORIGINS`: nil, no CORS headers.
    public var cors: CORSPolicy?

    public init(logLevel: Logger.Level = .info, testMode: Bool = false) {
        self.logLevel = logLevel
        self.testMode = testMode
    }

    public static func fromEnvironment(_ environment: [String: String]) throws(AuthError) -> LambdaSettings {
        let reader = EnvironmentReader(environment)
        var settings = LambdaSettings()
        if let level = reader.string("AUTH_LOG_LEVEL") {
            guard let value = Logger.Level(contractName: level) else {
                throw AuthConfiguration.configError("AUTH_LOG_LEVEL", "must be debug, info, warning or error")
            }
            settings.logLevel = value
        }
        settings.testMode = try reader.bool("AUTH_TEST_MODE") ?? false
        try reader.choice("AUTH_METRICS", "must be off or emf", into: &settings.metrics)
        if let namespace = reader.string("AUTH_METRICS_NAMESPACE") {
            guard EmbeddedMetrics.isValidNamespace(namespace) else {
                throw AuthConfiguration.configError("AUTH_METRICS_NAMESPACE", "must be 1 to 255 of A-Z a-z 0-9 . - _ / # : and space, not starting with AWS/")
            }
            settings.metricsNamespace = namespace
        }
        settings.cors = try CORSPolicy.fromEnvironment(environment)
        return settings
    }

    /// The level to log at before the settings are known to be valid (to report that they are not).
    static func bootLevel(_ environment: [String: String]) -> Logger.Level {
        Logger.Level(contractName: environment["AUTH_LOG_LEVEL"] ?? "") ?? .info
    }
}
