@testable import LambdaAuth
import LambdaAuthTestSupport
import Testing

/// Email keys (contract section 13), on both backends: ASCII lowercasing only, no linking by a
/// non-ASCII address, and an email claim that follows the user's provider email.
@Suite(.serialized) struct EmailKeyTests {
    static func items(_ world: FlowWorld) throws -> [Item] { try world.allItems(at: 0) }

    static func emailClaims(_ world: FlowWorld) throws -> [String: String] {
        var claims: [String: String] = [:]
        for item in try items(world) {
            guard let pk = item["PK"]?.stringValue, pk.hasPrefix("EMAIL#") else { continue }
            claims[String(pk.dropFirst(6))] = item["userId"]?.stringValue
        }
        return claims
    }

    static func profileEmail(_ world: FlowWorld, _ userID: String) throws -> String? {
        try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "PROFILE"))?["email"]?.stringValue
    }

    @Test func keysLowercaseASCIILettersOnly() {
        #expect(EmailKey.of("Ann.Lee+Tag@Example.COM") == "ann.lee+tag@example.com")
        for (_, localPart, _) in TestAddresses.folding {
            #expect(EmailKey.of(localPart + "@example.com") == nil, "\(localPart)")
        }
        #expect(EmailKey.of("kevin@ex\u{E4}mple.com") == nil)
        #expect(EmailKey.withoutTag("victim+1@example.com") == "victim@example.com")
        #expect(EmailKey.withoutTag("victim+a+b@example.com") == "victim@example.com")
        #expect(EmailKey.withoutTag("victim@ex+ample.com") == "victim@ex+ample.com", "a + after the @ is not a tag")
        #expect(EmailKey.withoutTag("victim@example.com") == "victim@example.com")
    }

    /// The security review's takeover: `\u{212A}evin@example.com` (verified at its provider) signed
    /// in to `kevin@example.com`'s account and overwrote its email. Each folding character, with
    /// the claim a release before this one would have written for the twin planted too.
    @Test(arguments: FlowWorld.Backend.allCases)
    func anAddressWithAFoldingCharacterNeverJoinsItsTwin(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let flows = try InProcessFlows(world)
        for (index, (name, localPart, twin)) in TestAddresses.folding.enumerated() {
            let twinAddress = twin + "@example.com"
            let victim = try flows.signIn(idToken: world.googleToken(subject: "victim-\(index)", email: twinAddress))
            let victimID = try #require(victim["user"]?["id"]?.stringValue)
            // What the earlier release's full Unicode lowercasing keyed the twin's claim by.
            var legacyClaim = TableKey(pk: "EMAIL#\(twinAddress.lowercased())", sk: "USER").item
            legacyClaim["userId"] = .s(victimID)
            try world.table().putItem(legacyClaim)
            let before = try Self.emailClaims(world)

            let attacker = try flows.signIn(.apple, idToken: world.appleToken(subject: "attacker-\(index)", email: localPart + "@example.com"))
            #expect(attacker["user"]?["id"]?.stringValue != victimID, "\(name): joined the twin's account")
            #expect(attacker["isNewUser"] == true, "\(name)")
            #expect(try Self.profileEmail(world, victimID) == twinAddress, "\(name): the twin's email was overwritten")
            #expect(try Self.emailClaims(world) == before, "\(name): an address without a key claimed something")
        }
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func theClaimMovesWithTheProvidersEmail(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(backend: backend)
        let flows = try InProcessFlows(world)
        let first = try flows.signIn(idToken: world.googleToken(subject: "mover", email: "old@example.com"))
        let userID = try #require(first["user"]?["id"]?.stringValue)
        #expect(try Self.emailClaims(world) == ["old@example.com": userID])

        // The provider reports a new address: the claim moves in the sign-in's own transaction.
        _ = flows.table.takeOperations()
        let moved = try flows.signIn(idToken: world.googleToken(subject: "mover", email: "New@Example.com"))
        #expect(moved["user"]?["id"]?.stringValue == userID)
        #expect(try Self.emailClaims(world) == ["new@example.com": userID])
        #expect(flows.table.takeOperations().filter { $0 == "TransactWriteItems" }.count == 1, "one write")

        // Whoever gets the old address later is someone else; the new address joins the user.
        let recycled = try flows.signIn(.apple, idToken: world.appleToken(subject: "recycler", email: "old@example.com"))
        let recyclerID = try #require(recycled["user"]?["id"]?.stringValue)
        #expect(recyclerID != userID)
        let joined = try flows.signIn(.apple, idToken: world.appleToken(subject: "mover-apple", email: "new@example.com"))
        #expect(joined["user"]?["id"]?.stringValue == userID)
        #expect(try Self.emailClaims(world) == ["new@example.com": userID, "old@example.com": recyclerID])

        // The new address is someone else's already: the user's claim is dropped, theirs stays.
        _ = try flows.signIn(idToken: world.googleToken(subject: "mover", email: "old@example.com"))
        #expect(try Self.emailClaims(world) == ["old@example.com": recyclerID])
        #expect(try Self.profileEmail(world, userID) == "old@example.com")

        // An unverified new address claims nothing.
        _ = try flows.signIn(idToken: world.googleToken(subject: "other", email: "other@example.com"))
        let otherID = try #require(Self.emailClaims(world)["other@example.com"])
        _ = try flows.signIn(idToken: world.googleToken(subject: "other", email: "unverified@example.com", changes: ["email_verified": false]))
        #expect(try Self.emailClaims(world)["other@example.com"] == nil)
        #expect(try Self.emailClaims(world)["unverified@example.com"] == nil)
        #expect(try Self.profileEmail(world, otherID) == "unverified@example.com")
    }
}
