import FoundationEssentials
import Crypto
import CryptoExtras
import LambdaAuth

/// A minimal CBOR encoder for building authenticator outputs in the tests and the demo (the
/// product only decodes).
public indirect enum TestCBOR {
    case int(Int64)
    case bytes([UInt8])
    case text(String)
    case array([TestCBOR])
    case map([(TestCBOR, TestCBOR)])
    case bool(Bool)

    public var encoded: [UInt8] {
        func head(_ major: UInt8, _ argument: UInt64) -> [UInt8] {
            switch argument {
            case 0..<24: return [major << 5 | UInt8(argument)]
            case 24..<256: return [major << 5 | 24, UInt8(argument)]
            case 256..<65536: return [major << 5 | 25, UInt8(argument >> 8), UInt8(argument & 0xFF)]
            default: return [major << 5 | 26] + (0..<4).reversed().map { UInt8(argument >> (8 * UInt64($0)) & 0xFF) }
            }
        }
        switch self {
        case .int(let value): return value >= 0 ? head(0, UInt64(value)) : head(1, UInt64(-1 - value))
        case .bytes(let bytes): return head(2, UInt64(bytes.count)) + bytes
        case .text(let text): return head(3, UInt64(text.utf8.count)) + Array(text.utf8)
        case .array(let items): return head(4, UInt64(items.count)) + items.flatMap(\.encoded)
        case .map(let pairs): return head(5, UInt64(pairs.count)) + pairs.flatMap { $0.0.encoded + $0.1.encoded }
        case .bool(let value): return [value ? 0xF5 : 0xF4]
        }
    }
}

/// A software authenticator for the tests and `authctl demo`: a credential of each algorithm, with
/// flags, counters and every field under the caller's control, so that each check can be made to
/// fail alone.
public struct SoftPasskeyAuthenticator: Sendable {
    public enum Key: Sendable {
        case p256(P256.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
    }

    public let key: Key
    public let credentialID: [UInt8]
    public var userHandle: [UInt8]
    public var signCount: UInt32 = 0
    public var rpID: String
    public var origin: String
    public var flags: UInt8 = 0b0001_1101  // UP, UV, BE, BS

    public init(algorithm: COSEAlgorithm = .es256, rpID: String = "example.com", origin: String = "https://example.com",
                userHandle: [UInt8] = [], credentialID: [UInt8]? = nil) {
        switch algorithm {
        case .es256: key = .p256(P256.Signing.PrivateKey())
        case .edDSA: key = .ed25519(Curve25519.Signing.PrivateKey())
        case .rs256: key = .rsa(try! _RSA.Signing.PrivateKey(keySize: .bits2048))
        }
        self.credentialID = credentialID ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
        self.rpID = rpID
        self.origin = origin
        self.userHandle = userHandle
    }

    public var coseKey: TestCBOR {
        switch key {
        case .p256(let key):
            let raw = Array(key.publicKey.rawRepresentation)
            return .map([(.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)), (.int(-2), .bytes(Array(raw[..<32]))), (.int(-3), .bytes(Array(raw[32...])))])
        case .ed25519(let key):
            return .map([(.int(1), .int(1)), (.int(3), .int(-8)), (.int(-1), .int(6)), (.int(-2), .bytes(Array(key.publicKey.rawRepresentation)))])
        case .rsa(let key):
            let components = try! key.publicKey.getKeyPrimitives()
            return .map([(.int(1), .int(3)), (.int(3), .int(-257)), (.int(-1), .bytes(Array(components.modulus))), (.int(-2), .bytes(Array(components.publicExponent)))])
        }
    }

    public func sign(_ message: [UInt8]) -> [UInt8] {
        switch key {
        case .p256(let key): return Array(try! key.signature(for: SHA256.hash(data: message)).derRepresentation)
        case .ed25519(let key): return Array(try! key.signature(for: message))
        case .rsa(let key): return Array(try! key.signature(for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5).rawRepresentation)
        }
    }

    public var algorithmLabel: Int64 {
        switch key { case .p256: -7; case .ed25519: -8; case .rsa: -257 }
    }

    public func clientDataJSON(type: String, challenge: [UInt8], origin: String? = nil) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(Base64.urlEncoded(challenge))","origin":"\#(origin ?? self.origin)","crossOrigin":false}"#.utf8)
    }

    public func authenticatorData(attested: Bool, flags: UInt8? = nil, rpID: String? = nil) -> [UInt8] {
        var data = Array(SHA256.hash(data: Array((rpID ?? self.rpID).utf8)))
        data.append((flags ?? self.flags) | (attested ? 0x40 : 0))
        data += [UInt8(signCount >> 24 & 0xFF), UInt8(signCount >> 16 & 0xFF), UInt8(signCount >> 8 & 0xFF), UInt8(signCount & 0xFF)]
        if attested {
            data += [UInt8](repeating: 0, count: 16) + [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)] + credentialID
            data += coseKey.encoded
        }
        return data
    }

    public enum Attestation: Sendable { case none, packedSelf }

    /// A RegistrationResponseJSON for `challenge`.
    public func registration(challenge: [UInt8], attestation: Attestation = .none, clientDataJSON: [UInt8]? = nil,
                             authenticatorData: [UInt8]? = nil, attestationObject: [UInt8]? = nil) -> JSONValue {
        let clientData = clientDataJSON ?? self.clientDataJSON(type: "webauthn.create", challenge: challenge)
        let authData = authenticatorData ?? self.authenticatorData(attested: true)
        let statement: TestCBOR
        switch attestation {
        case .none: statement = .map([])
        case .packedSelf:
            statement = .map([(.text("alg"), .int(algorithmLabel)), (.text("sig"), .bytes(sign(authData + Array(SHA256.hash(data: clientData)))))])
        }
        let format = attestation == .none ? "none" : "packed"
        let object = attestationObject ?? TestCBOR.map([(.text("fmt"), .text(format)), (.text("attStmt"), statement), (.text("authData"), .bytes(authData))]).encoded
        let id = Base64.urlEncoded(credentialID)
        return ["id": .string(id), "rawId": .string(id), "type": "public-key",
                "response": ["clientDataJSON": .string(Base64.urlEncoded(clientData)), "attestationObject": .string(Base64.urlEncoded(object)),
                             "transports": ["internal"]],
                "clientExtensionResults": [:]]
    }

    /// An AuthenticationResponseJSON for `challenge`; the count advances first, as a real authenticator's.
    public mutating func assertion(challenge: [UInt8], clientDataJSON: [UInt8]? = nil, authenticatorData: [UInt8]? = nil,
                                   countIncrement: UInt32 = 1, corruptSignature: Bool = false) -> JSONValue {
        signCount &+= countIncrement
        let clientData = clientDataJSON ?? self.clientDataJSON(type: "webauthn.get", challenge: challenge)
        let authData = authenticatorData ?? self.authenticatorData(attested: false)
        var signature = sign(authData + Array(SHA256.hash(data: clientData)))
        if corruptSignature { signature[signature.count / 2] ^= 0x01 }
        let id = Base64.urlEncoded(credentialID)
        return ["id": .string(id), "rawId": .string(id), "type": "public-key",
                "response": ["clientDataJSON": .string(Base64.urlEncoded(clientData)), "authenticatorData": .string(Base64.urlEncoded(authData)),
                             "signature": .string(Base64.urlEncoded(signature)), "userHandle": .string(Base64.urlEncoded(userHandle))],
                "clientExtensionResults": [:]]
    }
}

extension SoftPasskeyAuthenticator.Attestation: Equatable {}
