import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// The handlers, on both backends, against an authenticator nobody here wrote:
/// soft-webauthn (Tests/Scripts/webauthn_peer.py, in the virtual environment prerequisites.sh
/// makes). It registers for our creation options, signs in for our request options, pads its
/// credential id as some credential managers do, and sets UP without UV.
@Suite(.serialized) struct PasskeyPeerTests {
    static let environment = ["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": "https://example.com",
                              "AUTH_PASSKEY_USER_VERIFICATION": "preferred"]

    /// The peer's answer to `options`; a missing virtual environment fails the test, never skips it.
    static func peer(_ state: String, _ action: String, _ options: JSONValue) throws -> JSONValue {
        let python = TestSupport.packageRoot + "/.build/webauthn-peers/bin/python"
        let output = try ProcessRunner.run(python, arguments: [TestSupport.packageRoot + "/Tests/Scripts/webauthn_peer.py", state, action, "https://example.com"],
                                           environment: Environment.current(), stdin: options.serializedBytes())
        return try #require(output.exitCode == 0 ? output.json : nil, "webauthn_peer.py \(action): \(output.stderrText) (run Tests/Scripts/prerequisites.sh test)")
    }

    static func body(_ output: ProcessRunner.Output) throws -> JSONValue { try #require(output.json, "\(output.stderrText.suffix(800))") }

    @Test(arguments: FlowWorld.Backend.allCases)
    func softWebauthnRegistersAndSignsIn(backend: FlowWorld.Backend) throws {
        let world = try FlowWorld(Self.environment, backend: backend)
        let state = world.directory + "/soft-webauthn.json"
        let first = world.signIn(token: world.googleToken(subject: "peer-user", email: "peer@example.com"))
        let userID = try #require(first["user"]?["id"]?.stringValue)
        let accessToken = try #require(first["tokens"]?["accessToken"]?.stringValue)

        let creation = try Self.body(world.run("passkey", ["action": "register-options", "accessToken": .string(accessToken)]))
        let registration = try Self.peer(state, "create", creation)
        #expect(registration["id"]?.stringValue?.hasSuffix("=") == true, "soft-webauthn pads the id")
        let registered = try Self.body(world.run("passkey", ["action": "register", "accessToken": .string(accessToken), "credential": registration,
                                                             "name": "soft-webauthn"]))
        let passkeyID = try #require(registered["passkey"]?["id"]?.stringValue, "\(registered)")

        let request = try Self.body(world.run("passkey", ["action": "login-options"]))
        let assertion = try Self.peer(state, "get", request)
        let signedIn = try Self.body(world.run("signin", ["provider": "passkey", "credential": assertion]))
        #expect(signedIn["user"]?["id"]?.stringValue == userID, "\(signedIn)")
        #expect(signedIn["user"]?["identities"]?.arrayValue?.contains { $0["provider"] == "passkey" && $0["subject"] == .string(passkeyID) } == true)

        // The same assertion again: its count is no longer above the stored one, which is checked
        // before the transaction that would find its challenge used (PasskeyFlowTests: a reused
        // challenge with a fresh count is CHALLENGE_EXPIRED).
        let replayed = try Self.body(world.run("signin", ["provider": "passkey", "credential": assertion]))
        #expect(replayed["error"]?["code"] == "PASSKEY_INVALID" && replayed["error"]?["message"]?.stringValue?.contains("signCount 1") == true, "\(replayed)")
        // A second sign-in with fresh options; the peer's count goes on from 1 to 2.
        let again = try Self.peer(state, "get", try Self.body(world.run("passkey", ["action": "login-options"])))
        #expect(try Self.body(world.run("signin", ["provider": "passkey", "credential": again]))["user"]?["id"]?.stringValue == userID)
        // What the peer sends fails our UV rule when UV is required.
        let strict = try Self.peer(state, "get", try Self.body(world.run("passkey", ["action": "login-options"])))
        let refused = try Self.body(world.run("signin", ["provider": "passkey", "credential": strict], environment: ["AUTH_PASSKEY_USER_VERIFICATION": "required"]))
        #expect(refused["error"]?["code"] == "PASSKEY_INVALID" && refused["error"]?["message"]?.stringValue?.contains("UV") == true, "\(refused)")
    }
}
