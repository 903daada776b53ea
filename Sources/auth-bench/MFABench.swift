import LambdaAuth
import LambdaAuthTooling

/// Issue 41: a returning user's sign-in beside the same sign-in of a user with a second factor
/// (answered MFA_REQUIRED: one challenge written) and the challenge that completes it, whole
/// processes in stdin mode, taken in turn. Each user's challenge uses a TOTP step of its own (a
/// step signs in once), so each round has a user of its own, enrolled beforehand, not timed. The
/// DynamoDB requests of both are counted in the aws section (`AWSBench`).
enum MFABench {
    static var section: BenchSection { BenchSection(name: "mfa", run: run) }
    static let users = 30

    /// One process, whatever it answers (a refused sign-in is the point here).
    static func call(_ world: FlowBench.World, _ handler: String, _ event: JSONValue) -> (body: JSONValue, milliseconds: Double)? {
        let started = monotonicSeconds()
        guard let output = try? ProcessRunner.run(ProcessRunner.executable(handler), environment: world.environment, stdin: event.serializedBytes()),
              let body = output.json else { return nil }
        return (body, (monotonicSeconds() - started) * 1000)
    }

    /// A Google user with an active factor: its ID token and the factor's secret.
    struct Enrolled {
        let idToken: String
        let secret: String
    }

    static func enrol(_ world: FlowBench.World, subject: String, now: Int64) -> Enrolled? {
        let idToken = world.token(.google, subject: subject, email: "\(subject)@example.com", now: now)
        guard let access = call(world, "signin", ["provider": "google", "idToken": .string(idToken)])?.body["tokens"]?["accessToken"],
              let secret = call(world, "mfa", ["action": "totp-enroll", "accessToken": access])?.body["secret"]?.stringValue,
              let code = AuthenticatorApp.code(base32Secret: secret, at: SystemClock().nowSeconds),
              call(world, "mfa", ["action": "totp-confirm", "code": .string(code), "accessToken": access])?.body["recoveryCodes"] != nil
        else { return nil }
        return Enrolled(idToken: idToken, secret: secret)
    }

    /// The user's sign-in, answered MFA_REQUIRED: its mfaToken and time.
    static func pendingSignIn(_ world: FlowBench.World, _ user: Enrolled) -> (mfaToken: String, milliseconds: Double)? {
        guard let answer = call(world, "signin", ["provider": "google", "idToken": .string(user.idToken)]),
              let token = answer.body["error"]?["mfaToken"]?.stringValue else { return nil }
        return (token, answer.milliseconds)
    }

    /// The challenge with the code of the step after the confirmation's (one step of drift is
    /// accepted, and the confirmation used the current one).
    static func challenge(_ world: FlowBench.World, _ user: Enrolled, mfaToken: String) -> (body: JSONValue, milliseconds: Double)? {
        guard let code = AuthenticatorApp.code(base32Secret: user.secret, at: SystemClock().nowSeconds + 30) else { return nil }
        return call(world, "mfa", ["action": "challenge", "mfaToken": .string(mfaToken), "code": .string(code)])
    }

    static func run(_ table: inout BenchTable) {
        let world = FlowBench.makeWorld()
        defer { FileSystem.removeTree(world.directory) }
        let now = SystemClock().nowSeconds
        let enrolled = (0..<users).compactMap { enrol(world, subject: "mfa-bench-\($0)", now: now) }
        let plainToken = world.token(.google, subject: "mfa-bench-plain", email: "mfa-bench-plain@example.com", now: now)
        guard enrolled.count == users, call(world, "signin", ["provider": "google", "idToken": .string(plainToken)])?.body["tokens"] != nil else {
            table.add("mfa", "sign-in with a second factor", "not measured: the users could not be made")
            return
        }
        var plain: [Double] = [], required: [Double] = [], challenged: [Double] = []
        for user in enrolled {
            guard let signIn = call(world, "signin", ["provider": "google", "idToken": .string(plainToken)]), signIn.body["tokens"] != nil,
                  let pending = pendingSignIn(world, user),
                  let answer = challenge(world, user, mfaToken: pending.mfaToken), answer.body["tokens"] != nil else {
                table.add("mfa", "sign-in with a second factor", "not measured: a round failed")
                return
            }
            plain.append(signIn.milliseconds)
            required.append(pending.milliseconds)
            challenged.append(answer.milliseconds)
        }
        let label = "whole process, stdin mode, local store, median / p90 of \(users)"
        func cell(_ samples: [Double]) -> String { format(percentile(samples, 0.5)) + " / " + format(percentile(samples, 0.9)) + " ms" }
        table.add("mfa", "signin, returning user without a factor, \(label)", cell(plain))
        table.add("mfa", "signin, user with a factor (403 MFA_REQUIRED, the challenge written), \(label)", cell(required))
        table.add("mfa", "mfa challenge (TOTP code: the session opened, aal2), \(label)", cell(challenged))
        table.add("mfa", "sign-in with a factor end to end (signin + challenge) beside one without, medians",
                  format(percentile(required, 0.5) + percentile(challenged, 0.5)) + " against " + format(percentile(plain, 0.5)) + " ms")
    }
}
