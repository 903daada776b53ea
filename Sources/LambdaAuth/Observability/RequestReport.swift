#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// The two lines every request leaves behind once it is answered (contract section 18): its event
/// line in the log, whatever `AUTH_LOG_LEVEL` says (an audit trail that a log level could switch
/// off would not be one), and with `AUTH_METRICS=emf` its Embedded Metric Format line.
public struct RequestReport: Sendable {
    public let handler: String
    public let settings: LambdaSettings
    /// Where EMF lines go: stdout under the Runtime API (CloudWatch reads a function's output), the
    /// log's stderr in stdin mode, where stdout is the response.
    let metricsSink: @Sendable (String) -> Void

    public init(handler: String, settings: LambdaSettings, metricsSink: @escaping @Sendable (String) -> Void) {
        self.handler = handler
        self.settings = settings
        self.metricsSink = metricsSink
    }

    public func record(_ request: InvocationRequest?, _ response: InvocationResponse, context: InvocationContext,
                       startedAt: Double) {
        let milliseconds = (monotonicSeconds() - startedAt) * 1000
        let event = SecurityEvent.of(handler: handler, request: request, response: response)
        var metadata: Logger.Metadata = ["event": .string(event.name), "status": .number(response.status),
                                         "durationMs": .decimal(milliseconds)]
        for (name, value) in event.fields { metadata[name] = .string(value) }
        let hookMilliseconds = context.hooks.milliseconds
        if let hooks = context.hooks.names, let hookMilliseconds {
            metadata["hook"] = .string(hooks)
            metadata["hookMs"] = .decimal(hookMilliseconds)
        }
        var logger = context.logger
        logger.logLevel = .trace
        logger.log(level: response.status >= 500 ? .error : response.status >= 400 ? .warning : .info,
                   "\(event.name)", metadata: metadata)
        if settings.metrics == .emf {
            metricsSink(EmbeddedMetrics.line(namespace: settings.metricsNamespace, handler: handler,
                                              outcome: SecurityEvent.outcome(of: response), milliseconds: milliseconds,
                                              hookMilliseconds: hookMilliseconds, at: SystemClock().now()))
        }
    }
}
