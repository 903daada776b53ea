import LambdaAuth
import Testing

@Suite struct LocalCredentialVerifierTests {
    static let secret = "verifier-test-master-secret-0123"
    let minter = LocalCredentialMinter(masterSecret: secret, lifetime: 3600, random: SystemRandomSource())
    let verifier = LocalCredentialVerifier(masterSecret: secret)
    let now: Int64 = 1_800_000_000

    func signed(_ credentials: TemporaryCredentials, method: String = "GET", url: String, body: [UInt8] = [],
                at instant: Int64? = nil) throws -> LocalCredentialVerifier.Request {
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyID: credentials.accessKeyID,
                                                             secretAccessKey: credentials.secretAccessKey,
                                                             sessionToken: credentials.sessionToken),
                                 region: "us-east-1", service: "s3")
        let request = try signer.sign(HTTPRequest(method: method, url: url, body: body), now: Double(instant ?? now))
        return LocalCredentialVerifier.Request(method: request.method, url: request.url, headers: request.headers, body: body)
    }

    @Test func acceptsRequestsInsideTheUsersPrefix() throws {
        let credentials = try minter.issue(userID: "u-1", now: now)
        let put = try signed(credentials, method: "PUT", url: "https://photos.s3.amazonaws.com/users/u-1/a%20b.jpg", body: Array("jpeg".utf8))
        #expect(try verifier.verify(put, now: now + 60).userID == "u-1")
        let pathStyle = try signed(credentials, url: "https://s3.us-east-1.amazonaws.com/photos/users/u-1/x.jpg")
        #expect(try verifier.verify(pathStyle, now: now).prefix == "users/u-1/")
        let listing = try signed(credentials, url: "https://photos.s3.amazonaws.com/?list-type=2&prefix=users%2Fu-1%2F")
        #expect(try verifier.verify(listing, now: now).userID == "u-1")
    }

    @Test func refusesWhatItMust() throws {
        let credentials = try minter.issue(userID: "u-1", now: now)
        func failure(_ request: LocalCredentialVerifier.Request, at instant: Int64? = nil) -> LocalCredentialVerifier.Failure? {
            do {
                _ = try verifier.verify(request, now: instant ?? now)
                return nil
            } catch {
                return error
            }
        }
        // Another user's prefix, and a listing outside the prefix.
        #expect(failure(try signed(credentials, url: "https://photos.s3.amazonaws.com/users/u-2/x.jpg")) == .outsideUserPrefix("/users/u-2/x.jpg"))
        #expect(failure(try signed(credentials, url: "https://photos.s3.amazonaws.com/?prefix=users%2F")) != nil)
        // Expired credentials.
        #expect(failure(try signed(credentials, url: "https://photos.s3.amazonaws.com/users/u-1/x", at: now + 3600), at: now + 3600)
            == .sessionToken(.expired))
        // A tampered request: the body or the path changed after signing.
        var tampered = try signed(credentials, method: "PUT", url: "https://photos.s3.amazonaws.com/users/u-1/x", body: [1, 2, 3])
        tampered.body = [9, 9, 9]
        #expect(failure(tampered) == .payloadHashMismatch)
        var moved = try signed(credentials, url: "https://photos.s3.amazonaws.com/users/u-1/x")
        moved.url = "https://photos.s3.amazonaws.com/users/u-1/y"
        #expect(failure(moved) == .signatureMismatch)
        // Signed with the wrong secret.
        var wrongSecret = credentials
        wrongSecret.secretAccessKey = String(repeating: "A", count: 40)
        #expect(failure(try signed(wrongSecret, url: "https://photos.s3.amazonaws.com/users/u-1/x")) == .signatureMismatch)
        // Someone else's session token with this access key.
        let other = try minter.issue(userID: "u-2", now: now)
        var swapped = credentials
        swapped.sessionToken = other.sessionToken
        #expect(failure(try signed(swapped, url: "https://photos.s3.amazonaws.com/users/u-1/x")) == .sessionToken(.accessKeyMismatch))
        // A clock far from the signing time.
        #expect(failure(try signed(credentials, url: "https://photos.s3.amazonaws.com/users/u-1/x"), at: now + 1800) == .requestTimeSkewed)
        // No signature at all.
        #expect(failure(LocalCredentialVerifier.Request(method: "GET", url: "https://photos.s3.amazonaws.com/users/u-1/x", headers: []))
            == .malformedAuthorization)
    }
}
