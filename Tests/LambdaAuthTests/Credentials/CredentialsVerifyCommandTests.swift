import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// A local resource server's check, end to end: credentials from a real `signin`, a request signed
/// with them, and `authctl credentials verify` on the dev secret inside the store.
@Suite struct CredentialsVerifyCommandTests {
    @Test func verifiesRequestsSignedWithIssuedCredentials() throws {
        let world = FlowWorld()
        let body = world.signIn(token: world.googleToken(subject: "resource-user"))
        let userID = try #require(body["user"]?["id"]?.stringValue)
        let issued = try #require(body["credentials"])
        let signer = SigV4Signer(credentials: AWSCredentials(accessKeyID: issued["accessKeyId"]!.stringValue!,
                                                             secretAccessKey: issued["secretAccessKey"]!.stringValue!,
                                                             sessionToken: issued["sessionToken"]!.stringValue!),
                                 region: "us-east-1", service: "s3")

        func verify(_ url: String) throws -> ProcessRunner.Output {
            let request = try signer.sign(HTTPRequest(method: "GET", url: url), now: Double(world.now))
            let headerArguments = request.headers.flatMap { ["--header", "\($0.name): \($0.value)"] }
            return try ProcessRunner.run(ProcessRunner.executable("authctl"),
                                     arguments: ["credentials", "verify", "--method", "GET", "--url", url] + headerArguments,
                                     environment: world.environment)
        }

        let inside = try verify("https://photos.s3.amazonaws.com/users/\(userID)/avatar.jpg")
        #expect(inside.exitCode == 0, "\(inside.stderrText)")
        #expect(inside.json?["valid"] == true)
        #expect(inside.json?["userId"]?.stringValue == userID)

        let outside = try verify("https://photos.s3.amazonaws.com/users/someone-else/avatar.jpg")
        #expect(outside.exitCode == 1)
        #expect(outside.json?["valid"] == false)
    }
}
