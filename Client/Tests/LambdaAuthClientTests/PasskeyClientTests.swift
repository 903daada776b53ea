import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import LambdaAuthClient

/// Passkeys through the client against `authctl serve`, the platform's part played by
/// soft-webauthn (Tests/Scripts/webauthn_peer.py, a software authenticator nobody here wrote, in
/// the virtual environment that the root's Tests/Scripts/prerequisites.sh makes): the client
/// passes the options out and the credential JSON in, untouched.
@Suite(.serialized) struct PasskeyClientTests {
    static let origin = "https://example.com"
    /// soft-webauthn sets UP but never UV (it has no user to verify).
    static let environment = ["AUTH_PASSKEY_RP_ID": "example.com", "AUTH_PASSKEY_ORIGINS": origin,
                              "AUTH_PASSKEY_USER_VERIFICATION": "preferred"]

    /// The authenticator: options JSON in, credential JSON out, its key kept in `state`.
    static func authenticator(_ action: String, options: JSON, state: String) throws -> JSON {
        // Client/Tests/LambdaAuthClientTests/PasskeyClientTests.swift → the repository.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let python = root.appendingPathComponent(".build/webauthn-peers/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw AuthClientError.invalidResponse("no soft-webauthn at \(python): the root's Tests/Scripts/prerequisites.sh test makes it (make test runs it)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [root.appendingPathComponent("Tests/Scripts/webauthn_peer.py").path, state, action, origin]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        (process.standardInput, process.standardOutput, process.standardError) = (input, output, errors)
        try process.run()
        input.fileHandleForWriting.write(try JSONEncoder().encode(options))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let failure = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw AuthClientError.invalidResponse("webauthn_peer.py \(action): " + String(decoding: failure, as: UTF8.self))
        }
        return try JSONDecoder().decode(JSON.self, from: data)
    }

    /// A binary field of the authenticator's JSON, as the bytes a platform API would give.
    static func bytes(_ field: JSON?) throws -> Data {
        guard let text = field?.stringValue, let data = PasskeyJSON.data(base64URL: text) else {
            throw AuthClientError.invalidResponse("the authenticator's answer lacks a base64url field")
        }
        return data
    }

    @Test func base64URLWithAndWithoutPaddingAndNothingElse() {
        #expect(PasskeyJSON.base64URL(Data([0xFB, 0xFF])) == "-_8")
        #expect(PasskeyJSON.data(base64URL: "-_8") == Data([0xFB, 0xFF]))
        #expect(PasskeyJSON.data(base64URL: "-_8=") == Data([0xFB, 0xFF]))
        #expect(PasskeyJSON.data(base64URL: "not base64!") == nil)
    }

    @Test func registerSignOutAndSignInWithThePasskey() async throws {
        let server = try LocalServer(environment: Self.environment)
        let state = server.directory + "/authenticator.json"
        let auth = AuthClient(baseURL: server.baseURL)
        let user = try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "passkey-client"))

        let creation = try await auth.passkeyRegistrationOptions()
        #expect(creation["publicKey"]?["authenticatorSelection"]?["residentKey"] == "required")
        // What an iOS app hands ASAuthorizationPlatformPublicKeyCredentialProvider, as bytes.
        let platformOptions = try PasskeyJSON.CreationOptions(creation)
        #expect(platformOptions.relyingPartyID == "example.com" && platformOptions.challenge.count == 32)
        #expect(platformOptions.userID.count == 32 && platformOptions.excludedCredentialIDs.isEmpty)
        // And what it gets back, as bytes, turned into the JSON form by the library.
        let made = try Self.authenticator("create", options: creation, state: state)
        let registration = PasskeyJSON.registration(credentialID: try Self.bytes(made["rawId"]),
                                                    clientDataJSON: try Self.bytes(made["response"]?["clientDataJSON"]),
                                                    attestationObject: try Self.bytes(made["response"]?["attestationObject"]))
        let passkey = try await auth.registerPasskey(credential: registration, name: "soft key")
        #expect(passkey.name == "soft key" && passkey.lastUsedAt == nil)
        #expect(try await auth.passkeys() == [passkey])

        #expect(try await auth.signOut() == 1)
        #expect(await auth.isSignedIn == false)

        let request = try await auth.passkeySignInOptions()
        #expect(request["publicKey"]?["allowCredentials"] == .array([]), "discoverable credentials: the platform picks the passkey")
        #expect(try PasskeyJSON.RequestOptions(request).relyingPartyID == "example.com")
        let asserted = try Self.authenticator("get", options: request, state: state)
        let fields = asserted["response"]
        let assertion = PasskeyJSON.assertion(credentialID: try Self.bytes(asserted["rawId"]), clientDataJSON: try Self.bytes(fields?["clientDataJSON"]),
                                              authenticatorData: try Self.bytes(fields?["authenticatorData"]),
                                              signature: try Self.bytes(fields?["signature"]), userHandle: try Self.bytes(fields?["userHandle"]))
        let again = try await auth.signInWithPasskey(credential: assertion)
        #expect(again.id == user.id)
        #expect(again.identities.contains { $0.provider == "passkey" && $0.subject == passkey.id })
        #expect(try await auth.passkeys().first?.lastUsedAt != nil)

        // Deleting the passkey revokes nothing: this session (opened with it) goes on.
        try await auth.deletePasskey(id: passkey.id)
        #expect(try await auth.passkeys().isEmpty)
        await #expect(throws: AuthClientError.self) { try await auth.deletePasskey(id: passkey.id) }
        _ = try await auth.sessions()

        // The deleted passkey no longer signs in, and says so with the contract's code.
        let stranger = AuthClient(baseURL: server.baseURL)
        // (the peer's JSON as it is: a browser's or Android's credential goes through untouched)
        let refused = await #expect(throws: AuthClientError.self) {
            try await stranger.signInWithPasskey(credential: try Self.authenticator("get", options: try await stranger.passkeySignInOptions(), state: state))
        }
        #expect(refused?.code == "PASSKEY_INVALID" && refused?.status == 401)
        #expect(await stranger.isSignedIn == false)
    }
}
