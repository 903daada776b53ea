import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Issue 9's request budgets, counted on both backends: over a recording table on the local
/// store, and through a proxy in front of moto. Every count is
/// taken after a warm-up sign-in, as in a warm Lambda (the local store's first sign-in also
/// creates its development keys). GSI1 is refused throughout: no flow may need it.
@Suite(.serialized) struct RequestCountTests {
    static let budgets: KeyValuePairs<String, Int> = [
        "signin, new user": 3, "signin, returning user": 3, "refresh": 2, "refresh, grace retry": 3,
        "link-provider (link)": 3, "link-provider (unlink)": 2,
    ]

    /// Runs the five counted requests in order through `request` (a handler name and its direct
    /// event; the answer's body and the operations it cost) and checks each against its budget.
    static func expectBudgets(world: FlowWorld, _ request: (String, [String: JSONValue]) throws -> (JSONValue, [String])) throws {
        let idToken = JSONValue.string(world.googleToken(subject: "counted-user", email: "counted@example.com"))
        let (created, newUser) = try request("signin", ["provider": "google", "idToken": idToken])
        #expect(created["isNewUser"] == true, "\(created)")
        let (returned, returning) = try request("signin", ["provider": "google", "idToken": idToken])
        #expect(returned["isNewUser"] == false, "\(returned)")
        let refreshToken = try #require(returned["tokens"]?["refreshToken"])
        let (refreshed, refresh) = try request("refresh", ["refreshToken": refreshToken])
        let accessToken = try #require(refreshed["tokens"]?["accessToken"], "\(refreshed)")
        // The same token again within the grace period: the live token once more.
        let (retried, graceRetry) = try request("refresh", ["refreshToken": refreshToken])
        #expect(retried["tokens"]?["refreshToken"] == refreshed["tokens"]?["refreshToken"], "\(retried)")
        let (linked, link) = try request("link-provider", [
            "provider": "apple", "idToken": .string(world.appleToken(subject: "000123.counted.1")), "accessToken": accessToken,
        ])
        #expect(linked["user"]?["identities"]?.arrayValue?.count == 2, "\(linked)")
        let (unlinked, unlink) = try request("link-provider", ["provider": "apple", "action": "unlink", "accessToken": accessToken])
        #expect(unlinked["user"]?["identities"]?.arrayValue?.count == 1, "\(unlinked)")

        let counted = ["signin, new user": newUser, "signin, returning user": returning, "refresh": refresh, "refresh, grace retry": graceRetry,
                       "link-provider (link)": link, "link-provider (unlink)": unlink]
        for (flow, budget) in budgets {
            let operations = counted[flow]!
            #expect(operations.count <= budget, "\(world.backend) \(flow): \(operations.count) requests \(operations), budget \(budget)")
            #expect(!operations.contains { $0.hasPrefix("Query(") }, "\(world.backend) \(flow) queried an index: \(operations)")
        }
        // The shape, not only the number: a refresh is one keyed read and one transaction.
        #expect(refresh == ["GetItem", "TransactWriteItems"], "\(world.backend) refresh: \(refresh)")
        // A grace retry: the used token's item, the live token's item, one transaction of checks.
        #expect(graceRetry == ["GetItem", "GetItem", "TransactWriteItems"], "\(world.backend) grace retry: \(graceRetry)")
    }

    @Test func localStoreFlowsStayWithinTheirBudgets() throws {
        let world = FlowWorld()
        let flows = try InProcessFlows(world, refusingQueriesOn: "GSI1")
        _ = try flows.signIn(idToken: world.googleToken(subject: "warm-up", email: "warm-up@example.com"))
        try Self.expectBudgets(world: world) { handler, event in
            _ = flows.table.takeOperations()
            let body: JSONValue
            switch handler {
            case "signin": body = try flows.signIn(idToken: event["idToken"]!.stringValue!)
            case "refresh": body = try flows.refresh(event["refreshToken"]!.stringValue!)
            default: body = try flows.linkProvider(event)
            }
            return (body, flows.table.takeOperations())
        }
    }

    @Test func dynamoDBHandlersStayWithinTheirBudgets() throws {
        let proxy = try DynamoDBProxy(forwardingTo: MotoServer.shared().endpoint)
        defer { proxy.stop() }
        proxy.refuseQueries(onIndex: "GSI1")
        let world = try FlowWorld(["AUTH_DYNAMODB_ENDPOINT": proxy.endpoint], backend: .dynamoDB)
        world.signIn(token: world.googleToken(subject: "warm-up", email: "warm-up@example.com"))
        try Self.expectBudgets(world: world) { handler, event in try world.countedRun(handler, event, through: proxy) }
        #expect(proxy.indexQueries == 0)
    }
}
