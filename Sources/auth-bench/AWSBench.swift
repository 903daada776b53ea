import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport

/// The flows on the production backends as moto_server implements them (DynamoDB + STS), next to
/// the local store, and the DynamoDB requests each flow makes (issue 6: a returning user's
/// signin and a refresh at most 3 each; issue 28: a passkey sign-in at most 3). moto runs in
/// Python on this machine, so its times say how the flows behave on the DynamoDB code path, not
/// what AWS latency would be.
enum AWSBench {
    static var section: BenchSection { BenchSection(name: "aws", run: run) }

    static func run(_ table: inout BenchTable) {
        let moto: MotoServer
        let proxy: DynamoDBProxy
        let dynamoTable: DynamoDBTable
        let okta: BenchOIDCIssuer
        do {
            okta = try BenchOIDCIssuer()
            moto = try MotoServer.shared()
            dynamoTable = try moto.makeTable(prefix: "bench")
            proxy = try DynamoDBProxy(forwardingTo: moto.endpoint)
        } catch {
            table.add("aws", "moto_server", "not measured: \(error)")
            return
        }
        defer {
            proxy.stop()
            okta.server.stop()
        }
        let local = FlowBench.makeWorld()
        defer { FileSystem.removeTree(local.directory) }
        // moto's production environment brings its own AUTH_SIGNING_KEY, and the bench's world names
        // its key in AUTH_SIGNING_KEYS: two key variables would make every request a CONFIG_ERROR.
        var production = moto.productionEnvironment(table: dynamoTable.tableName)
        production["AUTH_SIGNING_KEY"] = nil
        let aws = FlowBench.makeWorld(production)
        defer { FileSystem.removeTree(aws.directory) }
        okta.publish(aws.identityProvider)

        let localTimes = FlowBench.measure(local)
        let awsTimes = FlowBench.measure(aws)
        for handler in ["signin", "refresh", "link-provider"] {
            table.add("aws", "\(handler) invocation, median (local store)", format(localTimes[handler]!) + " ms")
            table.add("aws", "\(handler) invocation, median (moto: DynamoDB + STS)", format(awsTimes[handler]!) + " ms")
        }

        // The same world seen through the counting proxy: every request a whole process makes.
        var counted = aws.environment
        counted["AUTH_DYNAMODB_ENDPOINT"] = proxy.endpoint
        counted.merge(okta.environment) { $1 }
        let world = FlowBench.World(directory: aws.directory, environment: counted, identityProvider: aws.identityProvider)
        let now = SystemClock().nowSeconds
        func requests(_ handler: String, _ event: JSONValue) -> (body: JSONValue, operations: [String]) {
            let before = proxy.operations.count
            let body = world.invoke(handler, event).body
            return (body, Array(proxy.operations.dropFirst(before)))
        }
        func row(_ name: String, _ operations: [String], target: String = "") {
            table.add("aws", "DynamoDB requests, \(name)", "\(operations.count) (\(operations.joined(separator: ", ")))", target: target)
        }
        let newUser = requests("signin", ["provider": "google", "idToken": .string(world.token(.google, subject: "count-user", email: "count@example.com", now: now))])
        row("signin, new user", newUser.operations, target: "<= 3")
        let returning = requests("signin", ["provider": "google", "idToken": .string(world.token(.google, subject: "count-user", email: "count@example.com", now: now))])
        row("signin, returning user", returning.operations, target: "<= 3")
        // A configured OpenID Connect provider: the first process caches its discovery document
        // and keys, the returning user's process reads them from AUTH_CACHE_DIR.
        let oktaToken = JSONValue.string(okta.token(aws.identityProvider, subject: "00u-count", email: "count-okta@example.com", now: now) ?? "")
        row("signin, new user of a configured OIDC provider", requests("signin", ["provider": "okta", "idToken": oktaToken]).operations,
            target: "<= 3")
        row("signin, returning user of a configured OIDC provider (keys cached)",
            requests("signin", ["provider": "okta", "idToken": oktaToken]).operations, target: "<= 3")
        let refreshed = requests("refresh", ["refreshToken": returning.body["tokens"]!["refreshToken"]!])
        row("refresh", refreshed.operations, target: "<= 2")
        let accessToken = refreshed.body["tokens"]!["accessToken"]!
        let apple = world.token(.apple, subject: "000123.count.1", email: nil, now: now)
        row("link-provider (link)", requests("link-provider", ["provider": "apple", "idToken": .string(apple), "accessToken": accessToken]).operations,
            target: "<= 3")
        row("link-provider (unlink)", requests("link-provider", ["provider": "apple", "action": "unlink", "accessToken": accessToken]).operations,
            target: "<= 2")
        // Issue 41: a user with an active factor (enrolled uncounted): the sign-in answered
        // MFA_REQUIRED, then the challenge that opens the session.
        if let factorUser = MFABench.enrol(world, subject: "count-mfa", now: now) {
            var before = proxy.operations.count
            let pending = MFABench.pendingSignIn(world, factorUser)
            row("signin of a user with a second factor (403 MFA_REQUIRED)", Array(proxy.operations.dropFirst(before)), target: "<= 3")
            before = proxy.operations.count
            let opened = pending.flatMap { MFABench.challenge(world, factorUser, mfaToken: $0.mfaToken) }
            row("mfa challenge" + (opened?.body["tokens"] == nil ? " (refused!)" : ""), Array(proxy.operations.dropFirst(before)), target: "<= 3")
        } else {
            table.add("aws", "DynamoDB requests, signin with a second factor", "no factor could be enrolled")
        }
        // A returning user's passkey: registered, and its challenge asked for, uncounted.
        guard var holder = PasskeyBench.Holder(world, subject: "count-passkey") else {
            table.add("aws", "DynamoDB requests, signin with a passkey", "no passkey could be registered")
            return
        }
        row("signin with a passkey (returning user)", requests("signin", holder.signIns(1)[0]).operations, target: "<= 3")
    }
}
