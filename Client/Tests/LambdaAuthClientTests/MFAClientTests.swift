import Foundation
import Testing
@testable import LambdaAuthClient

/// The second factor through the client against `authctl serve` (AUTH_MFA=optional), the
/// authenticator app played by pyotp (the root's Tests/Scripts/totp_peer.py, installed by its
/// Tests/Scripts/prerequisites.sh): enrol, sign in again through MFA_REQUIRED and the challenge,
/// step up another device with a recovery code, and remove the factor.
@Suite(.serialized) struct MFAClientTests {
    static let environment = ["AUTH_MFA": "optional"]

    /// The code pyotp makes from the enrolment's uri at `time`.
    static func code(_ uri: String, at time: Date) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("Tests/Scripts/totp_peer.py").path, uri, String(Int(time.timeIntervalSince1970))]
        let output = Pipe(), errors = Pipe()
        (process.standardOutput, process.standardError) = (output, errors)
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let failure = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, case .array(let codes)? = try JSONDecoder().decode(JSON.self, from: data)["codes"],
              let code = codes.first?.stringValue else {
            throw AuthClientError.invalidResponse("totp_peer.py (pyotp): " + String(decoding: failure, as: UTF8.self))
        }
        return code
    }

    @Test func enrolSignInWithTheFactorStepUpAndRemove() async throws {
        let server = try LocalServer(environment: Self.environment)
        let tablet = AuthClient(baseURL: server.baseURL)
        try await tablet.signIn(provider: "google", idToken: try await server.idToken("google", subject: "mfa-client"), device: Device(id: "tablet"))
        let phone = AuthClient(baseURL: server.baseURL)
        let user = try await phone.signIn(provider: "google", idToken: try await server.idToken("google", subject: "mfa-client"),
                                          device: Device(id: "phone"))

        let enrollment = try await phone.enrollTOTP()
        #expect(enrollment.uri.hasPrefix("otpauth://totp/") && enrollment.uri.contains("secret=\(enrollment.secret)"))
        let recoveryCodes = try await phone.confirmTOTP(code: try Self.code(enrollment.uri, at: Date()))
        #expect(recoveryCodes.count == 10)
        #expect(try await phone.mfaStatus() == MFAStatus(totp: true, recoveryCodesLeft: 10))

        #expect(try await phone.signOut() == 1)
        let required = await #expect(throws: AuthClientError.self) {
            try await phone.signIn(provider: "google", idToken: try await server.idToken("google", subject: "mfa-client"), device: Device(id: "phone"))
        }
        #expect(required?.code == "MFA_REQUIRED" && required?.status == 403)
        let challenge = try #require(required?.mfaChallenge)
        #expect(challenge.factors == ["totp", "recovery"])
        #expect(await phone.isSignedIn == false)
        // The next step's code: the confirmation used this one (a step signs in once).
        let again = try await phone.completeSignIn(mfaToken: challenge.mfaToken, code: try Self.code(enrollment.uri, at: Date().addingTimeInterval(30)))
        let signedIn = await phone.isSignedIn
        #expect(again.id == user.id && signedIn)

        // The tablet's session was opened with one factor: removing the factor needs a step-up.
        let refused = await #expect(throws: AuthClientError.self) { try await tablet.removeTOTP() }
        #expect(refused?.code == "AAL2_REQUIRED" && refused?.status == 403)
        let before = try await tablet.validAccessToken()
        try await tablet.stepUp(recoveryCode: recoveryCodes[0])
        #expect(try await tablet.validAccessToken() != before, "the stepped-up access token is the one handed out")
        try await tablet.removeTOTP()
        #expect(try await phone.mfaStatus() == MFAStatus(totp: false, recoveryCodesLeft: 0))
        // One factor signs in again.
        try await phone.signIn(provider: "google", idToken: try await server.idToken("google", subject: "mfa-client"), device: Device(id: "phone"))
    }
}
