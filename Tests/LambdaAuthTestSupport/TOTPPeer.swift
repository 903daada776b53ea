import LambdaAuth

/// pyotp (Tests/Scripts/totp_peer.py) as the user's authenticator app: it reads the `uri` of
/// `totp-enroll` with its Key Uri Format parser and makes the codes of given times, so the tests'
/// codes come from another implementation of RFC 6238 than ours.
public struct TOTPPeer: Sendable {
    public let uri: String
    /// What pyotp read from the uri: issuer, name, secret, digits, interval, algorithm.
    public let parsed: JSONValue

    public init(uri: String) throws {
        self.uri = uri
        parsed = try TestSupport.pythonPeer("totp_peer.py", [uri])
    }

    /// The codes of the given Unix times, in their order.
    public func codes(at times: [Int64]) throws -> [String] {
        let answer = try TestSupport.pythonPeer("totp_peer.py", [uri] + times.map(String.init))
        return (answer["codes"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    public func code(at time: Int64) throws -> String {
        guard let code = try codes(at: [time]).first else { throw TestSupport.PeerFailure(description: "pyotp made no code") }
        return code
    }
}
