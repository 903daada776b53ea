import Logging

/// What the Lambda layer itself reads from the environment, before any handler exists: how much
/// to log and whether the test hooks are on. Invalid values are CONFIG_ERRORs, as everywhere.
public struct LambdaSettings: Sendable {
    public var logLevel: Logger.Level = .info
    public var testMode = false

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
        return settings
    }

    /// The level to log at before the settings are known to be valid (to report that they are not).
    static func bootLevel(_ environment: [String: String]) -> Logger.Level {
        Logger.Level(contractName: environment["AUTH_LOG_LEVEL"] ?? "") ?? .info
    }
}
