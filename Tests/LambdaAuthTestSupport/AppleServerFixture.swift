import Crypto
import CryptoExtras
import LambdaAuth
import LambdaAuthTooling

/// A team's Sign in with Apple back channel for tests: a `.p8`-style key, team and key ids, a
/// data key, and the dev Apple server that accepts exactly this team's client secrets, on the
/// flow world's fixed clock. `environment` is what the handlers need on top of the world's.
public final class AppleServerFixture: Sendable {
    public static let teamID = "TEAM000001"
    public static let keyID = "KEY0000001"
    public let privateKey = P256.Signing.PrivateKey()
    public let dataKey: [UInt8] = SystemRandomSource().bytes(32)
    public let server: DevAppleServer

    /// `now` and `idTokenKey`: the flow world's clock and its Apple issuer's key (TestKeys.rsa(1)).
    public init(now: Int64 = TestIssuer().now, idTokenKey: _RSA.Signing.PrivateKey = TestKeys.rsa(1)) throws {
        server = try DevAppleServer(
            team: DevAppleServer.Team(teamID: AppleServerFixture.teamID, keyID: AppleServerFixture.keyID, publicKey: privateKey.publicKey),
            identityProvider: DevIdentityProvider(privateKey: idTokenKey), clock: FixedClock(Double(now)))
    }

    deinit { server.stop() }

    public var pem: String { privateKey.pemRepresentation }

    public var environment: [String: String] {
        server.environment.merging([
            "AUTH_APPLE_TEAM_ID": AppleServerFixture.teamID, "AUTH_APPLE_KEY_ID": AppleServerFixture.keyID,
            "AUTH_APPLE_PRIVATE_KEY": pem, "AUTH_DATA_KEY": Base64.encoded(dataKey),
        ]) { $1 }
    }
}
