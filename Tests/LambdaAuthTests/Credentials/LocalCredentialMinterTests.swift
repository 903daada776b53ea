import LambdaAuth
import Testing

@Suite struct LocalCredentialMinterTests {
    let minter = LocalCredentialMinter(masterSecret: "a-test-master-secret-of-32-bytes", lifetime: 3600, random: SystemRandomSource())

    @Test func mintsSTSShapedCredentials() throws {
        let credentials = try minter.issue(userID: "user-1", now: 1_000)
        #expect(credentials.accessKeyID.count == 20 && credentials.accessKeyID.hasPrefix("ASIA"))
        #expect(credentials.accessKeyID.dropFirst(4).allSatisfy { ("A"..."Z").contains($0) || ("2"..."7").contains($0) })
        #expect(credentials.secretAccessKey.count == 40)
        #expect(credentials.expiration == 4_600)
        #expect(credentials.json["expiration"] == "1970-01-01T01:16:40Z")
    }

    @Test func sessionTokenAuthenticatesKeyUserPrefixAndExpiry() throws {
        let credentials = try minter.issue(userID: "user-1", now: 1_000)
        let opened = try minter.open(sessionToken: credentials.sessionToken, accessKeyID: credentials.accessKeyID, now: 2_000)
        #expect(opened.claims.userID == "user-1")
        #expect(opened.claims.prefix == "users/user-1/")
        #expect(opened.secretAccessKey == credentials.secretAccessKey)

        #expect(throws: LocalCredentialMinter.VerificationFailure.expired) {
            try minter.open(sessionToken: credentials.sessionToken, accessKeyID: credentials.accessKeyID, now: 4_600)
        }
        let other = try minter.issue(userID: "user-2", now: 1_000)
        #expect(throws: LocalCredentialMinter.VerificationFailure.accessKeyMismatch) {
            try minter.open(sessionToken: credentials.sessionToken, accessKeyID: other.accessKeyID, now: 2_000)
        }
        let foreign = LocalCredentialMinter(masterSecret: "another-master-secret-0123456789", lifetime: 3600, random: SystemRandomSource())
        #expect(throws: LocalCredentialMinter.VerificationFailure.badSessionTokenSignature) {
            try foreign.open(sessionToken: credentials.sessionToken, accessKeyID: credentials.accessKeyID, now: 2_000)
        }
        // Changing the user inside the token breaks its MAC.
        let parts = credentials.sessionToken.dropFirst(5).split(separator: ".")
        let forged = JSONValue.object(["v": 1, "akid": .string(credentials.accessKeyID), "uid": "user-2",
                                       "prefix": "users/user-2/", "exp": 9_999_999]).serializedBytes()
        #expect(throws: LocalCredentialMinter.VerificationFailure.badSessionTokenSignature) {
            try minter.open(sessionToken: "LAv1." + Base64.urlEncoded(forged) + "." + parts[1],
                            accessKeyID: credentials.accessKeyID, now: 2_000)
        }
        #expect(throws: LocalCredentialMinter.VerificationFailure.malformedSessionToken) {
            try minter.open(sessionToken: "garbage", accessKeyID: credentials.accessKeyID, now: 2_000)
        }
    }

    @Test func everyIssueIsDistinct() throws {
        let first = try minter.issue(userID: "u", now: 1), second = try minter.issue(userID: "u", now: 1)
        #expect(first.accessKeyID != second.accessKeyID && first.secretAccessKey != second.secretAccessKey)
    }
}
