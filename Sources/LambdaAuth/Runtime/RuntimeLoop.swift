#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// The resident life of a handler under Lambda: the handler (secrets, configuration, services)
/// is built once per process (so caches, keys and HTTP handles stay warm), then events are served one at a time
/// through the same invocation path as stdin mode. Handlers know nothing of this loop.
public struct RuntimeLoop: Sendable {
    let client: RuntimeAPIClient
    let handler: any RequestHandler
    let testMode: Bool
    let logger: Logger
    /// Each request's event line and metrics.
    let requestReport: RequestReport

    /// A loop around an already built handler (`run` builds one from the environment).
    public init(client: RuntimeAPIClient, handler: any RequestHandler, testMode: Bool = false, logger: Logger,
                report: RequestReport = RequestReport(handler: "handler", settings: LambdaSettings(), metricsSink: writeStandardOutputLine)) {
        self.client = client
        self.handler = handler
        self.testMode = testMode
        self.logger = logger
        self.requestReport = report
    }

    /// Builds everything, then serves events until the Runtime API goes away. Returns the exit
    /// status (always non-zero: a healthy loop never ends).
    public static func run(name: String, address: String, environment: [String: String],
                           factory: HandlerMain.Factory) -> Int32 {
        var logger = Logger.jsonLines(level: LambdaSettings.bootLevel(environment))
        let client = RuntimeAPIClient(address: address)
        let settings: LambdaSettings
        let handler: any RequestHandler
        do {
            settings = try LambdaSettings.fromEnvironment(environment)
            logger.logLevel = settings.logLevel
        } catch {
            return failInit(client: client, logger: logger, error: error, handlerName: name)
        }
        do {
            handler = try factory(environment, logger)
        } catch {
            return failInit(client: client, logger: logger, error: AuthError.from(error), handlerName: name)
        }
        logger.debug("runtime loop started", metadata: ["handler": .string(name)])
        let loop = RuntimeLoop(client: client, handler: handler, testMode: settings.testMode, logger: logger,
                               report: RequestReport(handler: name, settings: settings, metricsSink: writeStandardOutputLine))
        do {
            while true {
                try loop.serve(try client.next())
            }
        } catch {
            logger.error("the runtime loop stops", metadata: ["reason": .string(error.description)])
            return 1
        }
    }

    /// Lambda shows the init error to whoever invokes the function: the message names the
    /// variable (configuration errors never contain its value).
    static func failInit(client: RuntimeAPIClient, logger: Logger, error: AuthError, handlerName: String) -> Int32 {
        let type = error.code == .configError ? "Runtime.ConfigError" : "Runtime.InitError"
        var fields: Logger.Metadata = ["handler": .string(handlerName), "code": .string(error.code.rawValue),
                                           "reason": .string(error.message)]
        if let detail = error.detail { fields["detail"] = .string(detail) }
        logger.error("initialisation failed", metadata: fields)
        do {
            try client.reportInitError(RuntimeAPIClient.ErrorReport(type: type, message: error.message))
        } catch {
            logger.error("cannot report the initialisation error", metadata: ["reason": .string(error.description)])
        }
        return 1
    }

    /// One event: a contract error is an ordinary response; only an unexpected failure or an
    /// unpostable response becomes an `/error` post. Either way the loop goes on. Once the answer
    /// is posted, the store's deferred checkpoint runs (if due): the caller already has its
    /// answer, and Lambda lets a function work until it asks for the next event.
    public func serve(_ invocation: RuntimeAPIClient.Invocation) throws(RuntimeAPIClient.Failure) {
        try CurrentInvocation.serving(invocation.requestID) { () throws(RuntimeAPIClient.Failure) in
            try serveNow(invocation)
            HandlerMain.runStoreMaintenance(logger: logger)
        }
    }

    func serveNow(_ invocation: RuntimeAPIClient.Invocation) throws(RuntimeAPIClient.Failure) {
        let logger = self.logger.with(requestID: invocation.requestID)
        exportTraceID(invocation.traceID)
        logger.debug("invocation started", metadata: [
            "deadlineMs": invocation.deadlineMilliseconds.map { .number($0) } ?? .null,
        ])
        let startedAt = monotonicSeconds()
        let context = InvocationContext(requestID: invocation.requestID, logger: logger,
                                        deadlineMilliseconds: invocation.deadlineMilliseconds)
        let decoded = EventCodec.decode(invocation.event)
        let request = try? decoded.request.get()
        let response: InvocationResponse
        switch decoded.request {
        case .failure(let error):
            response = HandlerMain.refuse(error, context: context)
        case .success(let request):
            do {
                response = try HandlerMain.respond(to: request, context: context, testMode: testMode) { handler }
            } catch {
                let typeName = String(describing: type(of: error.underlying))
                logger.error("the handler failed unexpectedly", metadata: ["errorType": .string(typeName),
                                                                 "detail": .string(String(describing: error.underlying))])
                requestReport.record(request, InvocationResponse(error: .internalError()), context: context,
                              startedAt: startedAt)
                try report(invocation, RuntimeAPIClient.ErrorReport(
                    type: "Function.Unhandled", message: "the handler failed unexpectedly (\(typeName))"), logger: logger)
                return
            }
        }
        // Before the response goes out: the event line is part of answering, and a process frozen
        // right after its response must not have left the request without one.
        requestReport.record(request, response, context: context, startedAt: startedAt)
        let body = EventCodec.encode(response, kind: decoded.kind, cors: requestReport.settings.cors,
                                     origin: request?.headers["origin"]).serializedBytes()
        guard body.count <= RuntimeAPIClient.maximumResponseBytes else {
            logger.error("the response is over Lambda's 6 MB limit", metadata: ["bytes": .number(body.count)])
            try report(invocation, RuntimeAPIClient.ErrorReport(
                type: "Function.ResponseSizeTooLarge", message: "the response is larger than 6 MB"), logger: logger)
            return
        }
        let status = try client.respond(requestID: invocation.requestID, body: body)
        if status != 202 {
            logger.warning("the Runtime API did not accept the response", metadata: ["status": .number(status)])
        }
    }

    func report(_ invocation: RuntimeAPIClient.Invocation, _ report: RuntimeAPIClient.ErrorReport,
                logger: Logger) throws(RuntimeAPIClient.Failure) {
        let status = try client.reportError(requestID: invocation.requestID, report)
        if status != 202 {
            logger.warning("the Runtime API did not accept the error report", metadata: ["status": .number(status)])
        }
    }

    /// X-Ray's SDKs read the trace id from the environment; one invocation's id must not leak
    /// into the next.
    func exportTraceID(_ traceID: String?) {
        if let traceID {
            setenv("_X_AMZN_TRACE_ID", traceID, 1)
        } else {
            unsetenv("_X_AMZN_TRACE_ID")
        }
    }
}
