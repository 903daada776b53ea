/// STS-shaped temporary AWS credentials (contract section 4).
public struct TemporaryCredentials: Sendable, Equatable {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String
    /// Epoch seconds.
    public var expiration: Int64

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String, expiration: Int64) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.expiration = expiration
    }

    public var json: JSONValue {
        ["accessKeyId": .string(accessKeyID), "secretAccessKey": .string(secretAccessKey),
         "sessionToken": .string(sessionToken), "expiration": .string(ISO8601.format(epochSeconds: expiration))]
    }
}

/// Mints credentials scoped to one user's S3 prefix (`users/<user id>/`). Two implementations:
/// local minting (offline, verifiable without a table look-up) and AWS STS AssumeRole.
public protocol CredentialIssuer: Sendable {
    func issue(userID: String, now: Int64) throws(AuthError) -> TemporaryCredentials
}
