@testable import LambdaAuth
import Testing

/// The mapping from item changes to events (contract section 22), one kind at a time.
@Suite struct ItemEventsTests {
    static let options = ItemEvents.Options(source: "https://auth.example.com")
    static let user = "u1"

    static func change(_ sk: String, pk: String = "USER#u1", old: Item?, new: Item?, ttl: Bool = false, eventID: String = "e-1") -> ItemChange {
        var change = ItemChange(key: TableKey(pk: pk, sk: sk), old: old, new: new, eventID: eventID, sequenceNumber: "100",
                                committedAt: 1_700_000_000_123)!
        change.byTimeToLive = ttl
        return change
    }

    static func profile(_ fields: Item = [:]) -> Item {
        var item: Item = ["PK": .s("USER#u1"), "SK": .s("PROFILE"), "email": .s("a@example.com"), "emailVerified": .bool(true),
                          "displayName": .s("A"), "version": .n(1), "lastSignInAt": .s("2026-01-01T00:00:00Z")]
        for (name, value) in fields { item[name] = value }
        return item
    }

    static func event(_ change: ItemChange, _ options: ItemEvents.Options = options) -> AuthEvent? {
        ItemEvents.event(for: change, options: options)
    }

    @Test func aNewProfileIsUserCreatedWithoutItsEmailUnlessAskedFor() throws {
        let created = try #require(Self.event(Self.change("PROFILE", old: nil, new: Self.profile())))
        #expect(created.type == .userCreated)
        #expect(created.subject == "u1")
        #expect(created.data["userId"] == "u1")
        #expect(created.data["email"] == nil)
        let withEmail = Self.event(Self.change("PROFILE", old: nil, new: Self.profile()),
                                   ItemEvents.Options(source: "x", includeEmail: true))
        #expect(withEmail?.data["email"] == "a@example.com")
    }

    @Test func bookkeepingAloneIsNoEventButAUserFieldIsUserUpdated() {
        let signedInAgain = Self.profile(["version": .n(2), "lastSignInAt": .s("2026-01-02T00:00:00Z"), "activeSessions": .m(["s": .n(1)])])
        #expect(Self.event(Self.change("PROFILE", old: Self.profile(), new: signedInAgain)) == nil)
        let renamed = Self.event(Self.change("PROFILE", old: Self.profile(), new: Self.profile(["displayName": .s("B")])))
        #expect(renamed?.type == .userUpdated)
        #expect(renamed?.data["changed"] == ["displayName"])
        let metadata = Self.event(Self.change("PROFILE", old: Self.profile(), new: Self.profile(["appMetadata": .s("{\"plan\":\"pro\"}")])))
        #expect(metadata?.data["changed"] == ["appMetadata"])
        // NULL and absent both say "no picture".
        #expect(Self.event(Self.change("PROFILE", old: Self.profile(["pictureUrl": .null]), new: Self.profile())) == nil)
    }

    @Test func equalImagesPublishNothing() {
        #expect(Self.event(Self.change("PROFILE", old: Self.profile(), new: Self.profile())) == nil)
    }

    @Test func aGuestThatGetsAnIdentityIsGuestUpgraded() {
        let guest = Self.profile(["isGuest": .bool(true), "email": .null])
        var upgraded = Self.profile(["email": .null])
        upgraded["isGuest"] = nil
        #expect(Self.event(Self.change("PROFILE", old: guest, new: upgraded))?.type == .guestUpgraded)
    }

    @Test func aDeletionPublishesUserDeletedOnceAtTheEnd() {
        let marked = Self.profile(["deletionRequestedAt": .s("2026-01-01T00:00:00Z"), "version": .n(2)])
        #expect(Self.event(Self.change("PROFILE", old: Self.profile(), new: marked)) == nil)
        let deleted = Self.event(Self.change("PROFILE", old: marked, new: nil))
        #expect(deleted?.type == .userDeleted)
        #expect(deleted?.data["reason"] == "deleted")
        #expect(Self.event(Self.change("PROFILE", old: marked, new: nil, ttl: true))?.data["reason"] == "expired")
    }

    static func session(_ status: String, reason: String? = nil) -> Item {
        var item: Item = ["PK": .s("USER#u1"), "SK": .s("SESSION#s1"), "status": .s(status),
                          "device": .m(["id": .s("device-secret-ish"), "name": .s("Ann's phone"), "platform": .s("ios")])]
        if let reason { item["endedReason"] = .s(reason) }
        return item
    }

    @Test func sessionsStartAndEndWithTheReasonTheirWriteRecorded() throws {
        let started = try #require(Self.event(Self.change("SESSION#s1", old: nil, new: Self.session("ACTIVE"))))
        #expect(started.type == .sessionStarted)
        #expect(started.data == ["userId": "u1", "sessionId": "s1", "platform": "ios"])
        for reason in ["signout", "revoked", "evicted", "reuse"] {
            let ended = Self.event(Self.change("SESSION#s1", old: Self.session("ACTIVE"), new: Self.session("REVOKED", reason: reason)))
            #expect(ended?.type == .sessionEnded)
            #expect(ended?.data["reason"] == .string(reason))
        }
        // Activity, a second revocation, an expiry: nothing.
        var active = Self.session("ACTIVE")
        active["lastActiveAt"] = .s("later")
        #expect(Self.event(Self.change("SESSION#s1", old: Self.session("ACTIVE"), new: active)) == nil)
        #expect(Self.event(Self.change("SESSION#s1", old: Self.session("REVOKED", reason: "evicted"),
                                       new: Self.session("REVOKED", reason: "evicted").merging(["ttl": .n(5)]) { $1 })) == nil)
        #expect(Self.event(Self.change("SESSION#s1", old: Self.session("ACTIVE"), new: nil, ttl: true)) == nil)
        // Deleted while active: an account deletion.
        #expect(Self.event(Self.change("SESSION#s1", old: Self.session("ACTIVE"), new: nil))?.data["reason"] == "deleted")
        #expect(Self.event(Self.change("SESSION#s1", old: Self.session("REVOKED"), new: nil)) == nil)
    }

    @Test func identitiesArePublishedFromTheUsersSideOnly() {
        let side: Item = ["PK": .s("USER#u1"), "SK": .s("IDENTITY#google"), "subject": .s("g-sub"), "email": .s("a@example.com")]
        let linked = Self.event(Self.change("IDENTITY#google", old: nil, new: side))
        #expect(linked?.type == .identityLinked)
        #expect(linked?.data == ["userId": "u1", "provider": "google", "subject": "g-sub"])
        #expect(Self.event(Self.change("IDENTITY#google", old: side, new: nil))?.type == .identityUnlinked)
        let link: Item = ["PK": .s("IDENTITY#google#g-sub"), "SK": .s("LINK"), "userId": .s("u1")]
        #expect(Self.event(Self.change("LINK", pk: "IDENTITY#google#g-sub", old: nil, new: link)) == nil)
        // The email provider's subject is the address.
        let emailSide: Item = ["PK": .s("USER#u1"), "SK": .s("IDENTITY#email"), "subject": .s("a@example.com")]
        #expect(Self.event(Self.change("IDENTITY#email", old: nil, new: emailSide))?.data["subject"] == nil)
    }

    @Test func passkeysHaveTheirOwnEvents() {
        let passkey: Item = ["PK": .s("USER#u1"), "SK": .s("IDENTITY#passkey#pk1"), "subject": .s("pk1"), "credentialId": .s("cred")]
        let registered = Self.event(Self.change("IDENTITY#passkey#pk1", old: nil, new: passkey))
        #expect(registered?.type == .passkeyRegistered)
        #expect(registered?.data == ["userId": "u1", "passkeyId": "pk1"])
        #expect(Self.event(Self.change("IDENTITY#passkey#pk1", old: passkey, new: nil))?.type == .passkeyDeleted)
    }

    @Test func tokensCodesAndCountersPublishNothing() {
        let token: Item = ["PK": .s("USER#u1"), "SK": .s("REFRESH#s1.1"), "secretHash": .s("abc"), "status": .s("ACTIVE")]
        #expect(Self.event(Self.change("REFRESH#s1.1", old: nil, new: token)) == nil)
        #expect(Self.event(Self.change("CODE", pk: "OTP#a@example.com", old: nil, new: ["PK": .s("OTP#a@example.com"), "SK": .s("CODE")])) == nil)
        #expect(Self.event(Self.change("TOKEN#apple", old: nil, new: ["PK": .s("USER#u1"), "SK": .s("TOKEN#apple")])) == nil)
    }

    @Test func theIdIsTheSameOnRedeliveryAndTheEventIsACloudEvent() throws {
        let first = try #require(Self.event(Self.change("PROFILE", old: nil, new: Self.profile(), eventID: "abc")))
        let again = try #require(Self.event(Self.change("PROFILE", old: nil, new: Self.profile(), eventID: "abc")))
        let other = try #require(Self.event(Self.change("PROFILE", old: nil, new: Self.profile(), eventID: "abd")))
        #expect(first.id == again.id)
        #expect(first.id != other.id)
        let json = first.json
        #expect(json["specversion"] == "1.0")
        #expect(json["source"] == "https://auth.example.com")
        #expect(json["time"] == "2023-11-14T22:13:20.123Z")
        #expect(json["sequence"]?.stringValue?.count == 40)
    }

    @Test func aStreamRecordReadsBackAsTheSameChange() throws {
        let change = Self.change("SESSION#s1", old: Self.session("ACTIVE"), new: Self.session("REVOKED", reason: "signout"))
        let read = try ItemChange(streamRecord: change.streamRecord(sourceARN: "local:changes"))
        #expect(read == change)
        var expired = Self.change("PROFILE", old: Self.profile(), new: nil)
        expired.byTimeToLive = true
        #expect(try ItemChange(streamRecord: expired.streamRecord(sourceARN: "x")).byTimeToLive)
    }
}
