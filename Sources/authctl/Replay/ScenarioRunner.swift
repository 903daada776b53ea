import LambdaAuth
import LambdaAuthTooling

/// A recorded scenario (`Events/scenarios/*.json`): invocations in order on a fixed clock, each
/// with the expected status and body.
///
/// ```json
/// {"description": "…", "now": "2026-03-01T09:00:00Z", "environment": {"AUTH_MAX_SESSIONS": "5"},
///  "steps": [{"name": "…", "handler": "signin", "advance": 0, "kind": "direct|http|rest",
///             "method": "POST", "path": "/auth/signin", "headers": {…}, "event": {…} | "eventFile": "Events/…",
///             "environment": {…}, "expect": {"status": 200, "body": {…}} | {"status": 401, "error": "CODE"},
///             "save": {"name": "user.id"}}]}
/// ```
/// `"appleServer": true` starts the dev Apple server for the scenario (placeholders
/// `{{appleCode …}}`, `{{appleNotification …}}`; `expect.appleRevocations`: how many tokens it has
/// revoked by the end of the step; `{{dataKey NAME}}`: a data key made for the run, and a
/// scenario that sets `AUTH_DATA_KEYS` replaces the back channel's own `AUTH_DATA_KEY`).
/// `"hookServer": true` starts a stand-in for the app's hook endpoint (`DevHookServer`):
/// `{{hookServer}}` is its URL, a step's `hookAnswers` sets what it answers from then on, and
/// `expect.hookCalls` lists the hooks the step called.
/// `"oidcIssuers": [{"name": "microsoft", "jwksPath": "/common/discovery/v2.0/keys",
/// "algorithms": ["RS256", "PS256"], "keysDeclareAlgorithm": false}]` starts a loopback stand-in
/// for the issuer of each configured provider named (`DevOIDCIssuers`): it publishes the dev
/// identity provider's keys for `algorithms` (default RS256) at `jwksPath` (default `/keys`), and
/// a discovery document under any path. `{{oidcIssuer NAME}}` is its base URL, for the
/// scenario's AUTH_OIDC_PROVIDERS (`"issuer": "{{oidcIssuer microsoft}}/{tenantid}/v2.0"`), and
/// `{{idToken NAME sub=… email=… tid=… alg=… iss=/PATH}}` a token of that configured provider as
/// the step's AUTH_OIDC_PROVIDERS describes it: its issuer (`{tenantid}` replaced by `tid`, which
/// the token carries too), its first audience and algorithm unless `aud`/`alg` say otherwise; an
/// `iss` starting with `/` is a path on the stand-in (another tenant's issuer, say).
/// An environment value may be a JSON array or object, passed as its compact text.
/// `advance` moves the clock forward (seconds) before the step; `environment` adds variables for
/// one step. Strings in events may hold `{{idToken …}}` and `{{$name}}` placeholders, and
/// `{{emailCode ADDRESS}}` (`{{wrongEmailCode ADDRESS}}`): the newest code sent to ADDRESS (any
/// other six digits), read from the replay's own outbox (AUTH_EMAIL_SENDER=outbox:, set for every
/// step); `{{totpCode SECRET [offset=SECONDS]}}` (`{{wrongTotpCode SECRET}}`): the code an
/// authenticator app shows for a base32 (or `$saved`) secret at the step's clock; environment values may hold `{{signingKey NAME}}` (a scenario that sets
/// `AUTH_SIGNING_KEYS` replaces the backend's own key). A string that is exactly
/// `{{passkeyRegistration NAME challenge=… handle=…}}` or `{{passkeyAssertion NAME challenge=…}}`
/// (values base64url or `$saved`) becomes a credential object from the replay's software
/// authenticator NAME (ES256; RP ID `example.com`, origin `https://example.com` unless `rpId=`,
/// `origin=` say otherwise), kept across the steps. `path` is the HTTP path of http/rest events
/// (default `/auth/<handler>`).
struct Scenario {
    struct Step {
        var name: String
        var handler: String
        var advance: Int64
        var kind: String
        var method: String
        var path: String?
        var headers: [String: String]
        var event: JSONValue
        var environment: [String: String]
        var expectedStatus: Int
        var expectedBody: JSONValue?
        var expectedError: String?
        var save: [String: String]
        var expectedAppleRevocations: Int?
        var hookAnswers: [String: JSONValue]
        var expectedHookCalls: [String]?
    }

    var path: String
    var description: String
    var start: Int64
    var environment: [String: String]
    var steps: [Step]
    var appleServer: Bool
    var hookServer: Bool
    var oidcIssuers: [DevOIDCIssuers.Issuer]

    init(path: String, root: String) throws {
        self.path = path
        let json: JSONValue
        do {
            json = try JSONValue.parse(try FileSystem.readFile(path))
        } catch {
            throw CommandFailure("\(path): \(error)")
        }
        func fail(_ reason: String) -> CommandFailure { CommandFailure("\(path): \(reason)") }
        description = json["description"]?.stringValue ?? path
        guard let now = json["now"]?.stringValue.flatMap(ISO8601.parse) else { throw fail("needs \"now\" as an ISO-8601 time") }
        start = Int64(now)
        environment = try Scenario.environmentMap(json["environment"], fail("environment must map names to strings or JSON"))
        appleServer = json["appleServer"] == true
        hookServer = json["hookServer"] == true
        oidcIssuers = try (json["oidcIssuers"]?.arrayValue ?? []).map { try DevOIDCIssuers.Issuer($0, fail: fail) }
        guard let rawSteps = json["steps"]?.arrayValue, !rawSteps.isEmpty else { throw fail("needs a non-empty \"steps\" array") }
        steps = try rawSteps.enumerated().map { index, raw in
            let label = "step \(index + 1)"
            guard let handler = raw["handler"]?.stringValue, HandlerNames.all.contains(handler) else {
                throw fail("\(label): handler must be one of \(HandlerNames.all.joined(separator: ", "))")
            }
            var event = raw["event"]
            if let file = raw["eventFile"]?.stringValue {
                do {
                    event = try JSONValue.parse(try FileSystem.readFile(root + "/" + file))
                } catch {
                    throw fail("\(label): eventFile \(file): \(error)")
                }
            }
            guard let event, let expect = raw["expect"], let status = expect["status"]?.int64Value else {
                throw fail("\(label): needs \"event\" (or \"eventFile\") and \"expect\" with a \"status\"")
            }
            return Step(
                name: raw["name"]?.stringValue ?? label, handler: handler, advance: raw["advance"]?.int64Value ?? 0,
                kind: raw["kind"]?.stringValue ?? "direct", method: raw["method"]?.stringValue ?? "POST",
                path: raw["path"]?.stringValue,
                headers: try Scenario.stringMap(raw["headers"], fail("\(label): headers must map names to strings")),
                event: event,
                environment: try Scenario.environmentMap(raw["environment"], fail("\(label): environment must map names to strings or JSON")),
                expectedStatus: Int(status), expectedBody: expect["body"], expectedError: expect["error"]?.stringValue,
                save: try Scenario.stringMap(raw["save"], fail("\(label): save must map names to paths")),
                expectedAppleRevocations: expect["appleRevocations"]?.int64Value.map(Int.init),
                hookAnswers: try raw["hookAnswers"].map { (answers) throws(CommandFailure) in
                    guard let object = answers.objectValue else { throw fail("\(label): hookAnswers must map hook types to answers") }
                    return object
                } ?? [:],
                expectedHookCalls: try expect["hookCalls"].map { (calls) throws(CommandFailure) in
                    guard let names = calls.arrayValue?.compactMap(\.stringValue), names.count == calls.arrayValue?.count else {
                        throw fail("\(label): expect.hookCalls must be an array of hook types")
                    }
                    return names
                })
        }
    }

    /// Variables; an array or object stands for its compact JSON text (AUTH_OIDC_PROVIDERS reads
    /// better as JSON than as an escaped string).
    static func environmentMap(_ value: JSONValue?, _ failure: CommandFailure) throws -> [String: String] {
        guard let value, !value.isNull else { return [:] }
        guard case .object(let members) = value else { throw failure }
        return try members.mapValues { member in
            if let text = member.stringValue { return text }
            guard member.arrayValue != nil || member.objectValue != nil else { throw failure }
            return member.serialized()
        }
    }

    static func stringMap(_ value: JSONValue?, _ failure: CommandFailure) throws -> [String: String] {
        guard let value, !value.isNull else { return [:] }
        guard case .object(let members) = value else { throw failure }
        var result: [String: String] = [:]
        for (name, member) in members {
            guard let text = member.stringValue else { throw failure }
            result[name] = text
        }
        return result
    }
}

/// Runs scenarios against the built handlers, each in a fresh temporary world (store or DynamoDB
/// table, JWKS cache, dev identity provider), and reports differences.
struct ScenarioRunner {
    let binDirectory: String
    let root: String
    let baseEnvironment: [String: String]
    let backend: ReplayBackend
    /// With `--metrics-out`: every step runs with `AUTH_METRICS=emf`, must write exactly one EMF
    /// line for its handler and outcome, and the lines are appended here (for an EMF validator).
    var metricsFile: String? = nil
    /// With `--exports DIR`: after its steps, the scenario's table fingerprint (`TableFingerprint`)
    /// must equal `DIR/<scenario>.items`; `record` writes it instead.
    var exports: (directory: String, record: Bool)? = nil
    /// With `--events-out`: what each step published (the local store's events as `events tail`
    /// prints them, or the DynamoDB table's stream records), appended here one step a line
    /// (`ScenarioEvents`).
    var eventsFile: String? = nil

    struct Outcome {
        var passed: Bool
        var report: [String]
    }

    func run(_ scenario: Scenario, verbose: Bool) throws -> Outcome {
        let world = try FileSystem.makeTemporaryDirectory(prefix: "authctl-replay")
        defer { FileSystem.removeTree(world) }
        let environment = try DevEnvironment(directory: world + "/dev", binDirectory: binDirectory)
        var storeEnvironment = try backend.storeEnvironment(world: world, inherited: baseEnvironment)
        let apple = scenario.appleServer ? try DevAppleBackChannel(identityProvider: environment.identityProvider, start: scenario.start) : nil
        if let apple { storeEnvironment.merge(apple.environment) { $1 } }
        let hooks = scenario.hookServer ? try DevHookServer() : nil
        defer { hooks?.stop() }
        if hooks != nil { storeEnvironment["AUTH_HOOK_SECRET"] = DevHookServer.secretVariable }
        let oidcIssuers = scenario.oidcIssuers.isEmpty ? nil
            : try DevOIDCIssuers(scenario.oidcIssuers, identityProvider: environment.identityProvider)
        var clock = scenario.start
        var saved: [String: String] = [:]
        var report: [String] = []
        let signingKeys = NamedSigningKeys()
        let passkeys = NamedPasskeyAuthenticators()
        var published = try eventsFile.map { file in
            try ScenarioEvents(scenario: String(scenario.path.split(separator: "/").last ?? ""), path: file, backend: backend,
                               world: world, storeEnvironment: storeEnvironment, inherited: baseEnvironment)
        }
        for (index, step) in scenario.steps.enumerated() {
            clock += step.advance
            let label = "step \(index + 1) (\(step.handler)) \(step.name)"
            apple?.clock.set(clock)
            var filler = PlaceholderFiller(environment: environment, now: clock, saved: saved, signingKeys: signingKeys,
                                           appleServer: apple, outbox: world + "/outbox", oidcIssuers: oidcIssuers, passkeys: passkeys,
                                           hookServer: hooks)
            hooks?.answer(step.hookAnswers)
            let scenarioVariables = try scenario.environment.merging(step.environment) { $1 }.mapValues(filler.fill)
            var variables = baseEnvironment.merging(scenarioVariables) { $1 }
            filler.oidcConfiguration = variables["AUTH_OIDC_PROVIDERS"]
            let payload = try filler.fill(step.event)
            let headers = try step.headers.mapValues(filler.fill)
            let event = Events.wrap(payload, kind: step.kind, method: step.method, headers: headers,
                                    path: step.path ?? "/auth/\(step.handler)")
            variables.merge(storeEnvironment) { $1 }
            if scenarioVariables["AUTH_SIGNING_KEYS"] != nil { variables["AUTH_SIGNING_KEY"] = nil }
            if scenarioVariables["AUTH_DATA_KEYS"] != nil { variables["AUTH_DATA_KEY"] = nil }
            variables["AUTH_EMAIL_SENDER"] = "outbox:" + world + "/outbox"
            variables["AUTH_TEST_MODE"] = "1"
            if metricsFile != nil { variables["AUTH_METRICS"] = "emf" }
            variables["AUTH_NOW"] = String(clock)
            let invocation = try environment.invoke(step.handler, event: event, environment: environment.handlerEnvironment(variables))
            // After each step: an account's erasure takes its records out of the local change
            // log, and a step's records are told from the next one's.
            try published?.record(step: index + 1, handler: step.handler, status: invocation.status, request: payload,
                                  response: invocation.body, variables: variables,
                                  readItems: index + 1 == scenario.steps.count
                                      || ["delete-account", "apple-notifications"].contains(scenario.steps[index + 1].handler))
            var problems = check(step, invocation, saved: saved)
            if let metricsFile {
                let lines = ScenarioRunner.metricLines(invocation.log).map { $0 + "\n" }.joined()
                do {
                    let earlier = FileSystem.exists(metricsFile) ? try FileSystem.readFile(metricsFile) : []
                    try FileSystem.writeAtomically(metricsFile, earlier + Array(lines.utf8))
                } catch {
                    problems.append("cannot append to \(metricsFile): \(error)")
                }
            }
            if let hooks {
                let (calls, unsigned) = hooks.takeCalls()
                if let expected = step.expectedHookCalls, expected != calls {
                    problems.append("hook calls: expected \(expected), the hook server had \(calls)")
                }
                if unsigned > 0 { problems.append("\(unsigned) hook call(s) whose webhook-signature did not verify") }
            } else if step.expectedHookCalls != nil {
                problems.append("expect.hookCalls needs the scenario's \"hookServer\": true")
            }
            if let expected = step.expectedAppleRevocations, expected != apple?.server.revocations.count {
                problems.append("Apple revocations: expected \(expected), the dev Apple server has \(apple?.server.revocations.count ?? 0)")
            }
            if problems.isEmpty {
                if verbose { report.append("  ok   \(label)") }
            } else {
                report.append("  FAIL \(label)")
                report += problems.map { "       \($0)" }
                let tail = invocation.log.split(separator: "\n").suffix(3)
                report += tail.map { "       log: \($0)" }
                return Outcome(passed: false, report: report)
            }
            for (name, path) in step.save {
                guard let value = invocation.body?.value(at: path) else {
                    report.append("  FAIL \(label): nothing at \(path) to save as \(name)")
                    return Outcome(passed: false, report: report)
                }
                saved[name] = value.stringValue ?? value.serialized()
            }
        }
        try published?.finish()
        if let exports {
            var name = String(scenario.path.split(separator: "/").last ?? "")
            if name.hasSuffix(".json") { name.removeLast(5) }
            let problems: [String]
            do {
                let table = try makeTable(try AuthConfiguration.fromEnvironment(baseEnvironment.merging(storeEnvironment) { $1 }),
                                          clock: FixedClock(Double(clock)))
                problems = TableFingerprint.check(try TableFingerprint.lines(of: table),
                                                  golden: exports.directory + "/" + name + ".items", record: exports.record)
            } catch {
                problems = ["cannot read the table's items: \(error)"]
            }
            if !problems.isEmpty {
                report.append("  FAIL table export")
                report += problems.map { "       \($0)" }
                return Outcome(passed: false, report: report)
            }
        }
        return Outcome(passed: true, report: report)
    }

    func check(_ step: Scenario.Step, _ invocation: DevEnvironment.Invocation, saved: [String: String]) -> [String] {
        var problems: [String] = []
        if invocation.exitCode != 0 { problems.append("exit status \(invocation.exitCode), expected 0") }
        guard let status = invocation.status, let body = invocation.body else {
            return problems + ["no JSON response on stdout"]
        }
        if step.kind != "direct", invocation.document?["statusCode"] == nil {
            problems.append("an HTTP event must get an HTTP-style response")
        }
        if status != step.expectedStatus { problems.append("status: expected \(step.expectedStatus), got \(status)") }
        let matcher = ResponseMatcher(saved: saved)
        if let code = step.expectedError {
            let actual = body["error"]?["code"]?.stringValue ?? "(none)"
            if actual != code {
                let message = body["error"]?["message"]?.stringValue.map { " (\($0))" } ?? ""
                problems.append("error code: expected \(code), got \(actual)\(message)")
            }
        }
        if let expected = step.expectedBody {
            problems += matcher.differences(expected: expected, actual: body)
        }
        let lines = invocation.log.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }
        // Contract section 18: every request, answered or refused, leaves exactly one event line.
        let events = lines.filter { $0["event"] != nil }
        if events.count != 1 { problems.append("expected one event line in the log, found \(events.count)") }
        if metricsFile != nil {
            let outcome = status < 300 ? "ok" : body["error"]?["code"]?.stringValue ?? "INTERNAL"
            let metrics = lines.filter { $0["_aws"] != nil }
            if metrics.count != 1 || metrics[0]["handler"]?.stringValue != step.handler || metrics[0]["outcome"]?.stringValue != outcome
                || metrics[0]["requests"]?.int64Value != 1 {
                problems.append("expected one EMF line for \(step.handler) with outcome \(outcome), found \(metrics.map { $0.serialized() })")
            }
        }
        return problems
    }

    /// The EMF lines of one step's log.
    static func metricLines(_ log: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.hasPrefix("{") && $0.contains("\"_aws\"") }
    }
}

/// Builds the event shapes of the contract around a request body.
enum Events {
    static func wrap(_ body: JSONValue, kind: String, method: String, headers: [String: String], path: String) -> JSONValue {
        var allHeaders: [String: JSONValue] = ["content-type": "application/json"]
        for (name, value) in headers { allHeaders[name] = .string(value) }
        switch kind {
        case "http":
            return ["version": "2.0", "routeKey": .string("\(method) \(path)"), "rawPath": .string(path), "rawQueryString": "",
                    "headers": .object(allHeaders),
                    "requestContext": ["http": ["method": .string(method), "path": .string(path), "protocol": "HTTP/1.1",
                                                "sourceIp": "203.0.113.9", "userAgent": "authctl"],
                                       "requestId": "replay", "stage": "$default"],
                    "body": .string(body.serialized()), "isBase64Encoded": false]
        case "rest":
            return ["resource": .string(path), "path": .string(path), "httpMethod": .string(method), "headers": .object(allHeaders),
                    "requestContext": ["resourcePath": .string(path), "httpMethod": .string(method), "requestId": "replay", "stage": "prod",
                                       "identity": ["sourceIp": "203.0.113.9"]],
                    "body": .string(body.serialized()), "isBase64Encoded": false]
        default:
            return body
        }
    }
}
