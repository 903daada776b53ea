import Crypto
import LambdaAuth
import LambdaAuthTooling
import Synchronization

/// Apple's back channel for a replayed scenario (`"appleServer": true`), `authctl invoke` and the
/// demo: the dev Apple server on loopback, accepting the client secrets of a team key made for
/// this run, on the run's clock. Its ID tokens are signed by the dev identity provider, whose
/// JWKS stands in for Apple's.
final class DevAppleBackChannel: Sendable {
    static let teamID = "DEVTEAM001"
    static let keyID = "DEVKEY0001"

    /// The run's clock as a scenario's steps move it, so client secrets are checked at the handlers' time.
    final class SteppedClock: WallClock, Sendable {
        private let instant: Mutex<Double>
        init(_ start: Int64) { instant = Mutex(Double(start)) }
        func now() -> Double { instant.withLock { $0 } }
        func set(_ seconds: Int64) { instant.withLock { $0 = Double(seconds) } }
    }

    let clock: SteppedClock
    let server: DevAppleServer
    private let teamKey = P256.Signing.PrivateKey()
    private let dataKey = SystemRandomSource().bytes(32)
    /// `{{dataKey NAME}}`: data keys made on first mention, for rotation scenarios.
    private let namedDataKeys = Mutex<[String: [UInt8]]>([:])

    init(identityProvider: DevIdentityProvider, start: Int64) throws {
        clock = SteppedClock(start)
        server = try DevAppleServer(team: DevAppleServer.Team(teamID: DevAppleBackChannel.teamID, keyID: DevAppleBackChannel.keyID,
                                                              publicKey: teamKey.publicKey),
                                    identityProvider: identityProvider, clock: clock)
    }

    deinit { server.stop() }

    var environment: [String: String] {
        server.environment.merging([
            "AUTH_APPLE_TEAM_ID": DevAppleBackChannel.teamID, "AUTH_APPLE_KEY_ID": DevAppleBackChannel.keyID,
            "AUTH_APPLE_PRIVATE_KEY": teamKey.pemRepresentation, "AUTH_DATA_KEY": Base64.encoded(dataKey),
        ]) { $1 }
    }
}

extension DevAppleBackChannel {
    /// Base64, as AUTH_DATA_KEYS lists them; the same key wherever the name appears in one run.
    func dataKey(named name: String) -> String {
        namedDataKeys.withLock { keys in
            if let key = keys[name] { return Base64.encoded(key) }
            let key = SystemRandomSource().bytes(32)
            keys[name] = key
            return Base64.encoded(key)
        }
    }
}

extension PlaceholderFiller {
    /// `{{dataKey NAME}}`: a data key of the scenario's Apple back channel.
    func dataKey(named name: String) throws -> String {
        guard let appleServer else { throw CommandFailure("{{dataKey}} needs \"appleServer\": true in the scenario") }
        return appleServer.dataKey(named: name)
    }

    /// `{{appleCode sub=… aud=…}}`: a code the scenario's dev Apple server exchanges once.
    func appleCode(_ options: [String: String]) throws -> String {
        guard let appleServer else { throw CommandFailure("{{appleCode}} needs \"appleServer\": true in the scenario") }
        return appleServer.server.mintCode(subject: options["sub"] ?? "dev-user-1", clientID: options["aud"] ?? DevEnvironment.appleAudiences[0],
                                           email: options["email"])
    }

    /// `{{appleNotification type=… sub=… jti=… aud=…}}`: a server-to-server notification's payload
    /// as Apple signs it (here by the dev identity provider), its `events` a JSON string.
    func appleNotification(_ options: [String: String]) throws -> String {
        guard let type = options["type"] else { throw CommandFailure("{{appleNotification}} needs type=") }
        do {
            return try environment.identityProvider.appleNotification(
                type: type, subject: options["sub"] ?? "dev-user-1", audience: options["aud"] ?? DevEnvironment.appleAudiences[0],
                id: options["jti"] ?? "dev-notification-\(now)", email: options["email"], now: now)
        } catch {
            throw CommandFailure("cannot sign a dev notification: \(error)")
        }
    }
}
