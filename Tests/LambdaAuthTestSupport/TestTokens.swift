import Crypto
import CryptoExtras
import LambdaAuth
import LambdaAuthTooling
import Logging
import Synchronization

/// RSA keys for tests. Generating one takes tens of milliseconds, so a few are made once per test
/// process and shared; tests that need "another provider's key" take a different index.
public enum TestKeys {
    private static let keys: [_RSA.Signing.PrivateKey] = (0..<3).map { _ in
        try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    public static func rsa(_ index: Int = 0) -> _RSA.Signing.PrivateKey { keys[index] }

    /// A key too short to be accepted (CryptoExtras refuses these below 2048 bits).
    public static let weakRSA: _RSA.Signing.PrivateKey = try! _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
}

/// A fake identity provider for tests: one key, its JWKS, and tokens shaped like Google's or
/// Apple's (through the product's own minting), plus forgeries of every kind.
public struct TestIssuer: Sendable {
    public let key: _RSA.Signing.PrivateKey
    public let keyID: String
    /// Fixed "now" for token claims (epoch seconds); pair it with `FixedClock(now)`.
    public let now: Int64

    public init(keyIndex: Int = 0, keyID: String = "test-key-0", now: Int64 = 1_900_000_000) {
        key = TestKeys.rsa(keyIndex)
        self.keyID = keyID
        self.now = now
    }

    public var jwk: JSONValue { JSONWebKey(keyID: keyID, material: .rsa(key.publicKey)).publicJWK }
    public var jwks: JSONValue { TestJWKS.document([jwk]) }

    /// Claims as the dev identity provider shapes them, with `changes` applied (`nil` removes).
    public func claims(_ provider: ProviderName = .google, audience: String = TestIssuer.googleAudience,
                       subject: String = "1234567890", email: String? = "user@example.com",
                       changes: [String: JSONValue?] = [:]) -> [String: JSONValue] {
        var options = DevTokenOptions(subject: subject, audience: audience)
        options.email = email
        options.name = provider == .google ? "Test User" : nil
        var claims = options.claims(for: provider, now: now)
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    /// A correctly signed token over `claims`; `header` adds or overrides header members.
    public func token(_ claims: [String: JSONValue], header: [String: JSONValue] = [:], keyID: String? = nil) -> String {
        try! JWSSigner.signRS256(header: header, payload: claims, keyID: keyID ?? self.keyID, key: key)
    }

    public func token(_ provider: ProviderName = .google, changes: [String: JSONValue?] = [:]) -> String {
        token(claims(provider, audience: provider == .google ? TestIssuer.googleAudience : TestIssuer.appleAudience,
                     changes: changes))
    }

    /// A token signed over raw JSON texts (duplicate members, odd spacing) with this key.
    public func token(headerJSON: String, payloadJSON: String) -> String {
        let input = TokenForge.part(headerJSON) + "." + TokenForge.part(payloadJSON)
        let signature = try! key.signature(for: SHA256.hash(data: Array(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64.urlEncoded(signature.rawRepresentation)
    }

    public static let googleAudience = "google-client.apps.example.com"
    public static let appleAudience = "com.example.app"
}

/// Hand-made tokens: arbitrary parts, arbitrary signatures.
public enum TokenForge {
    public static func part(_ json: String) -> String { Base64.urlEncoded(Array(json.utf8)) }

    /// `BASE64URL(header) '.' BASE64URL(payload)` of any JSON values, objects or not.
    public static func signingInput(header: JSONValue, payload: JSONValue) -> String {
        Base64.urlEncoded(header.serializedBytes()) + "." + Base64.urlEncoded(payload.serializedBytes())
    }

    public static func token(header: JSONValue, payload: JSONValue, signature: [UInt8]) -> String {
        signingInput(header: header, payload: payload) + "." + Base64.urlEncoded(signature)
    }

    /// Replaces one dot-separated part of `token` (0 header, 1 payload, 2 signature).
    public static func replacing(part index: Int, of token: String, with replacement: String) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = replacement
        return parts.joined(separator: ".")
    }
}

public enum TestJWKS {
    public static func document(_ keys: [JSONValue]) -> JSONValue { ["keys": .array(keys)] }

    /// Writes `document` to a file and returns its `file://` URL.
    public static func file(_ document: JSONValue, in directory: String, name: String = "jwks.json") -> String {
        let path = directory + "/" + name
        try! FileSystem.writeAtomically(path, document.serializedBytes(), durable: false)
        return "file://" + path
    }
}

/// Log lines kept in memory, so that a test can read what was logged.
public final class CapturedLog: Sendable {
    private let captured = Mutex<[String]>([])

    public init() {}

    public var logger: Logger {
        Logger.jsonLines(level: .debug, sink: { [self] line in captured.withLock { $0.append(line) } })
    }

    public var lines: [String] { captured.withLock { $0 } }
}

/// A clock the test moves by hand.
public final class ManualClock: WallClock, Sendable {
    private let instant: Mutex<Double>

    public init(_ instant: Double) { self.instant = Mutex(instant) }

    public func now() -> Double { instant.withLock { $0 } }
    public func advance(by seconds: Double) { instant.withLock { $0 += seconds } }
}

/// Environments for `AuthConfiguration.fromEnvironment` in verification tests.
public enum VerifierEnvironment {
    public static func make(googleJWKS: String, appleJWKS: String? = nil, cacheDirectory: String,
                            extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "AUTH_GOOGLE_AUDIENCES": "other-client," + TestIssuer.googleAudience,
            "AUTH_APPLE_AUDIENCES": TestIssuer.appleAudience,
            "AUTH_GOOGLE_JWKS_URL": googleJWKS,
            "AUTH_APPLE_JWKS_URL": appleJWKS ?? googleJWKS,
            "AUTH_CACHE_DIR": cacheDirectory,
            // Never the default `.auth-store` in the working directory (the package root).
            "AUTH_STORE": cacheDirectory + "/store",
        ]
        for (name, value) in extra { environment[name] = value }
        return environment
    }
}

/// Local parts spelled with a character that Unicode case mapping folds into another letter,
/// and the address each must never reach: lowercasing takes the Kelvin sign to `k`, the
/// Angstrom and Ohm signs to `\u{E5}` and `\u{3C9}`; case folding takes a long s to `s`;
/// uppercasing takes a dotless i to `I`.
public enum TestAddresses {
    public static let folding: [(name: String, localPart: String, twin: String)] = [
        ("the Kelvin sign U+212A", "\u{212A}evin", "kevin"),
        ("the Angstrom sign U+212B", "\u{212B}ngstrom", "\u{E5}ngstrom"),
        ("the Ohm sign U+2126", "\u{2126}hm", "\u{3C9}hm"),
        ("a dotless i U+0131", "adm\u{131}n", "admin"),
        ("a long s U+017F", "\u{17F}am", "sam"),
    ]
}
