#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// The whole life of a handler executable: either the Lambda Runtime API loop (when
/// `AWS_LAMBDA_RUNTIME_API` is set) or one event from a file / stdin to stdout. What the handler
/// is made of (secrets, configuration, services) is the factory's business (`Startup`).
public enum HandlerMain {
    /// Builds the handler from the process environment; a thrown AuthError (CONFIG_ERROR) is the
    /// start's failure.
    public typealias Factory = @Sendable ([String: String], Logger) throws -> any RequestHandler

    /// A handler executable's whole main.swift: `HandlerMain.run(HandlerCatalogue.signin)`.
    public static func run(_ entry: HandlerEntry, arguments: [String] = CommandLine.arguments) -> Never {
        run(name: entry.name, arguments: arguments, factory: entry.factory)
    }

    public static func run(name: String, arguments: [String] = CommandLine.arguments, factory: @escaping Factory) -> Never {
        let environment = Environment.current()
        let bootLogger = Logger.jsonLines(level: LambdaSettings.bootLevel(environment))
        if let address = environment["AWS_LAMBDA_RUNTIME_API"] {
            exit(RuntimeLoop.run(name: name, address: address, environment: environment, factory: factory))
        }
        let eventBytes: [UInt8]
        do {
            eventBytes = try readEvent(arguments: arguments)
        } catch {
            bootLogger.error("cannot read the event", metadata: ["reason": .string(String(describing: error))])
            let response = InvocationResponse(error: AuthError(.invalidRequest, "the event cannot be read: \(error)"))
            exit(emit(EventCodec.encode(response, kind: .direct)) ? 0 : 1)
        }
        let response = invokeOnce(name: name, environment: environment, event: eventBytes, factory: factory)
        let written = emit(response)
        runStoreMaintenance(logger: bootLogger)
        exit(written ? 0 : 1)
    }

    /// The store work a write deferred off the request path (LocalTable's checkpoint), run once
    /// the response is out. A failure loses nothing (the log keeps every change) and is retried.
    static func runStoreMaintenance(logger: Logger) {
        for failure in StoreMaintenance.runDue() {
            logger.warning("store maintenance failed; it is retried later", metadata: ["reason": .string(failure.description)])
        }
    }

    /// One invocation end to end, as the stdin mode runs it: returns the response document. The
    /// log and metrics lines go to `logSink` (stderr), so that tests can run a handler in their
    /// own process and still read what it logged.
    public static func invokeOnce(name: String, environment: [String: String], event: [UInt8], factory: Factory,
                                  logSink: @escaping @Sendable (String) -> Void = writeStandardErrorLine) -> JSONValue {
        let startedAt = monotonicSeconds()
        let decoded = EventCodec.decode(event)
        var logger = Logger.jsonLines(level: LambdaSettings.bootLevel(environment), sink: logSink)
        let requestID = SystemRandomSource().identifier(bits: 64)
        let settings: LambdaSettings
        do {
            settings = try LambdaSettings.fromEnvironment(environment)
            logger.logLevel = settings.logLevel
        } catch {
            logger.error("invalid configuration", metadata: ["reason": .string(error.message)])
            let response = InvocationResponse(error: error)
            // Its event line still: a configuration error is a failure an operator must see.
            RequestReport(handler: name, settings: LambdaSettings(), metricsSink: logSink)
                .record(try? decoded.request.get(), response, context: InvocationContext(requestID: requestID, logger: logger.with(requestID: requestID)),
                        startedAt: startedAt)
            return EventCodec.encode(response, kind: decoded.kind)
        }
        let context = InvocationContext(requestID: requestID, logger: logger.with(requestID: requestID))
        let response: InvocationResponse
        switch decoded.request {
        case .failure(let error):
            response = refuse(error, context: context)
        case .success(let request):
            response = handle(request, context: context, testMode: settings.testMode) {
                try factory(environment, context.logger)
            }
        }
        // stdout is the response here, so the metrics join the log on stderr.
        RequestReport(handler: name, settings: settings, metricsSink: logSink)
            .record(try? decoded.request.get(), response, context: context, startedAt: startedAt)
        return EventCodec.encode(response, kind: decoded.kind, cors: settings.cors, origin: (try? decoded.request.get())?.headers["origin"])
    }

    /// Runs the handler, turning every thrown error into the contract's error response (stdin
    /// mode: an unexpected failure is INTERNAL, as there is nobody else to tell).
    public static func handle(_ request: InvocationRequest, context: InvocationContext, testMode: Bool,
                              handler makeHandler: () throws -> any RequestHandler) -> InvocationResponse {
        do {
            return try respond(to: request, context: context, testMode: testMode, handler: makeHandler)
        } catch {
            return errorResponse(AuthError.from(error.underlying), context: context)
        }
    }

    /// A thrown error that is not the contract's: the Runtime API loop reports it to Lambda.
    public struct UnexpectedFailure: Error {
        public let underlying: any Error
    }

    /// With `AUTH_TEST_MODE=1` only, a request carrying `"_testFault": "throw"` fails like a bug
    /// would, so that tests can drive the unexpected-failure path of a real process.
    struct InjectedTestFault: Error, CustomStringConvertible {
        var description: String { "the _testFault hook threw (AUTH_TEST_MODE=1)" }
    }

    /// The invocation path that stdin mode and the Runtime API loop share: contract errors
    /// (AuthError, AuthErrorConvertible) become responses, anything else is thrown.
    public static func respond(to request: InvocationRequest, context: InvocationContext, testMode: Bool,
                               handler makeHandler: () throws -> any RequestHandler) throws(UnexpectedFailure) -> InvocationResponse {
        do {
            if testMode, request.body["_testFault"] == "throw" { throw InjectedTestFault() }
            let handler = try makeHandler()
            return try InvocationDeadline.withDeadline(milliseconds: context.deadlineMilliseconds) {
                try handler.handle(request, context: context)
            }
        } catch let error where error is AuthError || error is any AuthErrorConvertible {
            return errorResponse(AuthError.from(error), context: context)
        } catch {
            throw UnexpectedFailure(underlying: error)
        }
    }

    /// An event that could not be decoded into a request.
    public static func refuse(_ error: AuthError, context: InvocationContext) -> InvocationResponse {
        context.logger.info("request refused", metadata: ["code": .string(error.code.rawValue)])
        return InvocationResponse(error: error)
    }

    static func errorResponse(_ authError: AuthError, context: InvocationContext) -> InvocationResponse {
        var fields: Logger.Metadata = ["code": .string(authError.code.rawValue)]
        if let detail = authError.detail { fields["detail"] = .string(detail) }
        context.logger.log(level: authError.status >= 500 ? .error : .info, "\(authError.message)", metadata: fields)
        return InvocationResponse(error: authError)
    }

    static func readEvent(arguments: [String]) throws(FileSystem.Failure) -> [UInt8] {
        // One byte over the limit is enough to know an event is too large; the rest is not read.
        let limit = EventCodec.maximumStreamBatchBytes + 1
        if arguments.count > 1 {
            do {
                return try FileSystem.readFile(arguments[1], limit: limit)
            } catch where error.errno == EFBIG {
                return [UInt8](repeating: 0x20, count: limit)
            }
        }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while output.count < limit {
            let count = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileSystem.Failure(path: "<stdin>", operation: "read", errno: errno)
            }
            if count == 0 { break }
            output.append(contentsOf: chunk[0..<count])
        }
        return output
    }

    /// Writes the response and a newline to stdout; false when it could not be written.
    @discardableResult
    public static func emit(_ document: JSONValue) -> Bool {
        var bytes = document.serializedBytes()
        bytes.append(0x0A)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
