import Crypto
@testable import LambdaAuth
import LambdaAuthTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Erased means erased on disk (contract section 13): once `delete-account` answered, no file of
/// the local store holds the user's id, subjects or email, in its content or its name, while
/// the other users' data is still all there.
@Suite(.serialized) struct OnDiskErasureTests {
    /// Every file and directory under `root` whose name or bytes contain one of `needles`.
    static func traces(of needles: [String], under root: String) -> [String] {
        var found: [String] = []
        func walk(_ path: String) {
            var status = stat()
            guard lstat(path, &status) == 0 else { return }
            let name = String(path.split(separator: "/").last ?? "")
            for needle in needles where name.contains(needle) || name.contains(StoreLayout.escape(needle)) {
                found.append("name \(path)")
            }
            if status.st_mode & S_IFMT == S_IFDIR {
                for entry in (try? FileSystem.listDirectory(path)) ?? [] { walk(path + "/" + entry) }
                return
            }
            let bytes = (try? FileSystem.readFile(path)) ?? []
            for needle in needles where bytes.contains(Array(needle.utf8)) { found.append("content \(path): \(needle)") }
        }
        walk(root)
        return found
    }

    @Test func afterDeleteAccountNoStoreFileHoldsTheUser() throws {
        let world = FlowWorld()
        let subject = "erasure-subject-71", appleSubject = "000555.erasure.71", email = "erasure-71@example.com"
        let stayer = world.signIn(token: world.googleToken(subject: "stays-subject", email: "stays@example.com"))
        let signedIn = world.signIn(token: world.googleToken(subject: subject, email: email))
        let userID = try #require(signedIn["user"]?["id"]?.stringValue)
        let accessToken = try #require(signedIn["tokens"]?["accessToken"])
        // Give the log and the partition files some history of the user: a refresh, a second
        // identity, a second session.
        #expect(world.run("refresh", ["refreshToken": try #require(signedIn["tokens"]?["refreshToken"])]).errorCode == nil)
        #expect(world.run("link-provider", ["accessToken": accessToken, "provider": "apple",
                                            "idToken": .string(world.appleToken(subject: appleSubject))]).errorCode == nil)
        world.signIn(token: world.googleToken(subject: subject, email: email))
        let needles = [userID, subject, appleSubject, email]
        #expect(!Self.traces(of: needles, under: world.storeDirectory).isEmpty, "the probe finds the user before the deletion")

        let deleted = world.run("delete-account", ["accessToken": accessToken])
        #expect(deleted.responseBody?["deleted"] == true, "\(deleted.stdoutText)")
        // Contract section 20 (which comes after section 13's erasure): the revocation list names
        // the deleted user, in its own partition, for as long as an access token of theirs can
        // still be valid (its `ttl`); nothing else of the user is left anywhere.
        let left = Self.traces(of: needles, under: world.storeDirectory)
        let listed = left.filter { $0.hasPrefix("content ") && $0.contains("REVOKED") && $0.hasSuffix(": " + userID) }
        #expect(left.filter { !listed.contains($0) }.isEmpty, "\(left)")
        let entries = try world.allItems().filter { $0["userId"]?.stringValue == userID }
        #expect(entries.count == 1 && entries.allSatisfy { ($0["PK"]?.stringValue ?? "").hasPrefix("REVOKED#") }, "\(entries)")
        #expect(try world.allItems(at: world.now + 961).filter { $0["userId"]?.stringValue == userID }.isEmpty)

        let stayerID = try #require(stayer["user"]?["id"]?.stringValue)
        #expect(try world.table().getItem(TableKey(pk: "USER#\(stayerID)", sk: "PROFILE")) != nil, "the other user is intact")
        #expect(world.run("sessions", ["accessToken": try #require(stayer["tokens"]?["accessToken"])]).errorCode == nil)
    }
}
