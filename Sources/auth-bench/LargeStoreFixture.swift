import Crypto
import LambdaAuth
import LambdaAuthTooling
#if canImport(Glibc)
import Glibc
#endif

/// Fills a store with realistic users, as the flows would have written them: PROFILE, the identity
/// link (both sides), the email index, a session and an ACTIVE refresh token each.
enum LargeStoreFixture {
    static func items(forUser index: Int, now: Int64) -> [Item] {
        let userID = "benchuser\(index)"
        let subject = String(100_000_000_000 + index)
        let stamp = AttributeValue.s(ISO8601.format(epochSeconds: now))
        let hash = SHA256.hexDigest(of: Array("bench-refresh-\(index)".utf8))
        return [
            Keys.profileKey(userID).item + ["email": .s("user\(index)@example.com"), "emailVerified": .bool(true),
             "displayName": .s("User \(index)"), "pictureUrl": .null, "createdAt": stamp, "updatedAt": stamp, "lastSignInAt": stamp,
             "identityCount": .n(1), "activeSessions": .m(["s\(index)": .n(now)]), "version": .n(1)],
            Keys.identityLink(.google, subject).item + ["userId": .s(userID), "provider": .s("google"),
             "subject": .s(subject), "email": .s("user\(index)@example.com"), "linkedAt": stamp],
            Keys.userIdentity(userID, .google, subject: subject).item + ["subject": .s(subject), "email": .s("user\(index)@example.com"), "linkedAt": stamp],
            Keys.email("user\(index)@example.com").item + ["userId": .s(userID)],
            Keys.session(userID, "s\(index)").item + ["device": .m([:]), "createdAt": stamp, "lastActiveAt": stamp,
             "status": .s("ACTIVE"), "ttl": .n(now + 2_592_000)],
            Keys.refreshToken(userID, "t\(index)").item + ["GSI1PK": .s(Keys.tokenHashIndexKey(hash: hash)), "GSI1SK": .s(Keys.tokenHashIndexSortKey),
             "familyId": .s("s\(index)"), "userId": .s(userID), "status": .s("ACTIVE"), "createdAt": stamp,
             "expiresAt": .s(ISO8601.format(epochSeconds: now + 2_592_000)), "ttl": .n(now + 2_678_400)],
        ]
    }

    /// Through the import path (`authctl store import`), as a user would fill a store.
    static func fill(directory: String, users: Int) {
        let file = directory + ".fixture.jsonl"
        defer { FileSystem.removeTree(file) }
        let now = SystemClock().nowSeconds
        var lines: [UInt8] = []
        for index in 0..<users {
            for item in items(forUser: index, now: now) { lines += TableTransfer.line(item) }
        }
        do {
            try FileSystem.writeAtomically(file, lines, durable: false)
            let descriptor = open(file, O_RDONLY | O_CLOEXEC)
            defer { close(descriptor) }
            _ = try TableTransfer.importLines(from: descriptor, path: file, into: LocalTable(directory: directory, clock: SystemClock()))
        } catch {
            fatalError("bench: filling the store failed: \(error)")
        }
    }
}

/// A key's item with more attributes: the fixtures keyed as the flows key them (`Keys`).
func + (key: Item, attributes: Item) -> Item { key.merging(attributes) { $1 } }
