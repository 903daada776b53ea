import Crypto

/// `AUTH_CREDENTIALS=sts`: credentials from AWS STS `AssumeRole` on `AUTH_STS_ROLE_ARN`, limited by
/// a session policy to the user's own prefix of `AUTH_USER_BUCKET` and tagged `userId`.
///
/// The role's trust policy must let the handler's own role call `sts:AssumeRole` and
/// `sts:TagSession`; the role's permissions must include at least what the session policy
/// grants (the effective permissions are the intersection). When the handler runs with role
/// credentials (on Lambda it does), this is role chaining and AWS caps the session at one hour:
/// keep `AUTH_CREDENTIALS_TTL` at 3600 or less.
public struct STSCredentialIssuer: CredentialIssuer {
    public let roleARN: String
    public let bucket: String
    public let durationSeconds: Int64
    public let endpoint: String
    let signer: SigV4Signer
    let http: any HTTPClient
    /// Real time for signatures (see AWSJSONClient.signingClock).
    let signingClock: any WallClock

    static let sharedHTTPClient = CurlHTTPClient()

    public init(roleARN: String, bucket: String, durationSeconds: Int64, endpoint: String, region: String,
                credentials: AWSCredentials, http: any HTTPClient, signingClock: any WallClock = SystemClock()) {
        self.roleARN = roleARN
        self.bucket = bucket
        self.durationSeconds = durationSeconds
        self.endpoint = endpoint.hasSuffix("/") ? endpoint : endpoint + "/"
        self.signer = SigV4Signer(credentials: credentials, region: region, service: "sts")
        self.http = http
        self.signingClock = signingClock
    }

    /// What `AUTH_CREDENTIALS=sts` reads: `AUTH_STS_ROLE_ARN`, `AUTH_USER_BUCKET`, `AUTH_CREDENTIALS_TTL`,
    /// `AUTH_STS_ENDPOINT` (nil: the regional endpoint) and the `AWS_*` region and credentials.
    public struct Settings: Sendable {
        public var roleARN, bucket: String
        public var durationSeconds: Int64
        public var endpoint, region: String?
        public var credentials: AWSCredentials?
    }

    /// A missing region or AWS credentials is a CONFIG_ERROR, thrown by the first issue (the
    /// token service builds its issuer on first use), not at start.
    public init(settings: Settings, http: (any HTTPClient)? = nil, signingClock: any WallClock = SystemClock()) throws(AuthError) {
        let (region, credentials) = try AWSEnvironment.require(region: settings.region, credentials: settings.credentials,
                                                               for: "AUTH_CREDENTIALS=sts")
        self.init(roleARN: settings.roleARN, bucket: settings.bucket, durationSeconds: settings.durationSeconds,
                  endpoint: settings.endpoint ?? "https://sts.\(region).amazonaws.com", region: region,
                  credentials: credentials, http: http ?? STSCredentialIssuer.sharedHTTPClient, signingClock: signingClock)
    }

    public func issue(userID: String, now: Int64) throws(AuthError) -> TemporaryCredentials {
        // The id goes into an ARN pattern, where `*` or `?` would widen the grant to other users.
        guard STSCredentialIssuer.isSafeUserID(userID) else {
            throw .internalError("refusing to scope STS credentials to a user id outside [A-Za-z0-9._-]")
        }
        let form: [(name: String, value: String)] = [
            ("Action", "AssumeRole"), ("Version", "2011-06-15"), ("RoleArn", roleARN),
            ("RoleSessionName", STSCredentialIssuer.roleSessionName(userID: userID)),
            ("DurationSeconds", String(durationSeconds)),
            ("Policy", sessionPolicy(userID: userID).serialized()),
            ("Tags.member.1.Key", "userId"), ("Tags.member.1.Value", userID),
        ]
        let response: HTTPResponse
        do {
            response = try AWSQueryRequest(endpoint: endpoint, signer: signer, http: http, signingClock: signingClock).post(form, timeout: 3)
        } catch {
            switch error {
            case .libraryUnavailable(let reason):
                throw AuthError(.configError, "AUTH_CREDENTIALS=sts cannot reach STS: \(reason)")
            case .transport(let reason):
                throw STSCredentialIssuer.unavailable("STS AssumeRole failed: \(reason)", retryable: true)
            case .unsendable(let reason):
                throw STSCredentialIssuer.unavailable("STS AssumeRole could not be sent: \(reason)", retryable: false)
            }
        }
        let text = String(decoding: response.body, as: UTF8.self)
        guard response.status == 200 else {
            let (code, message) = AWSQueryRequest.errorSummary(response)
            let retryable = response.status >= 500 || STSCredentialIssuer.retryableCodes.contains(code)
            throw STSCredentialIssuer.unavailable("STS AssumeRole failed: \(code)\(message.isEmpty ? "" : ": \(message)")", retryable: retryable)
        }
        do {
            return try STSXML.credentials(fromAssumeRoleResponse: text)
        } catch {
            throw STSCredentialIssuer.unavailable("STS AssumeRole answered 200 but \(error.reason)", retryable: false)
        }
    }

    static let retryableCodes: Set<String> = [
        "Throttling", "ThrottlingException", "RequestLimitExceeded", "ServiceUnavailable", "InternalFailure",
        "IDPCommunicationError",
    ]

    static func unavailable(_ detail: String, retryable: Bool) -> AuthError {
        AuthError(.credentialsUnavailable, "temporary credentials cannot be issued now", detail: detail, retryable: retryable)
    }

    /// Objects under `users/<id>/` and listing that prefix only.
    public func sessionPolicy(userID: String) -> JSONValue {
        let prefix = "users/\(userID)/"
        return [
            "Version": "2012-10-17",
            "Statement": [
                ["Sid": "OwnObjects", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                 "Resource": .string("arn:aws:s3:::\(bucket)/\(prefix)*")],
                ["Sid": "ListOwnPrefix", "Effect": "Allow", "Action": "s3:ListBucket",
                 "Resource": .string("arn:aws:s3:::\(bucket)"),
                 "Condition": ["StringLike": ["s3:prefix": [.string(prefix), .string(prefix + "*")]]]],
            ],
        ]
    }

    /// `lambda-auth-<id>` when that fits STS's rules ([\w+=,.@-], 2 to 64 characters), else
    /// `lambda-auth-h` + 40 hex digits of the id's SHA-256. Deterministic, so CloudTrail entries of
    /// one user group together.
    public static func roleSessionName(userID: String) -> String {
        let plain = "lambda-auth-" + userID
        if plain.utf8.count <= 64, userID.utf8.allSatisfy(isSessionNameByte) { return plain }
        return "lambda-auth-h" + SHA256.hexDigest(of: Array(userID.utf8)).prefix(40)
    }

    static func isSessionNameByte(_ byte: UInt8) -> Bool {
        PercentEncoding.isUnreserved(byte) && byte != UInt8(ascii: "~") || "+=,.@-_".utf8.contains(byte)
    }

    static func isSafeUserID(_ userID: String) -> Bool {
        (1...128).contains(userID.utf8.count) && userID.utf8.allSatisfy { PercentEncoding.isUnreserved($0) && $0 != UInt8(ascii: "~") }
    }
}

/// Just enough XML for STS's Query API answers: the text of elements that occur exactly once, with
/// the five predefined entities and character references decoded. Anything else (a nested
/// element where text is expected, an unknown entity, a repeated element) is refused.
enum STSXML {
    struct Failure: Error {
        let reason: String
    }

    static func credentials(fromAssumeRoleResponse text: String) throws(Failure) -> TemporaryCredentials {
        guard let result = uniqueElement("AssumeRoleResult", in: text),
              let credentials = uniqueElement("Credentials", in: String(result)) else {
            throw Failure(reason: "its body has no single AssumeRoleResult/Credentials element")
        }
        func field(_ name: String) throws(Failure) -> String {
            guard let raw = uniqueElement(name, in: String(credentials)), let value = unescape(raw), !value.isEmpty else {
                throw Failure(reason: "Credentials has no single, plain-text \(name)")
            }
            return value
        }
        let accessKeyID = try field("AccessKeyId")
        let secret = try field("SecretAccessKey")
        let token = try field("SessionToken")
        let expirationText = try field("Expiration")
        guard accessKeyID.utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }),
              (16...128).contains(accessKeyID.utf8.count) else {
            throw Failure(reason: "its AccessKeyId is not an access key id")
        }
        guard let expiration = ISO8601.parse(expirationText) else {
            throw Failure(reason: "its Expiration is not an ISO-8601 time")
        }
        return TemporaryCredentials(accessKeyID: accessKeyID, secretAccessKey: secret, sessionToken: token,
                                    expiration: Int64(expiration.rounded(.down)))
    }

    /// The raw content of the one `<name>…</name>` (or `<name attributes>…`) in `text`; nil when
    /// there is none, or more than one.
    static func uniqueElement(_ name: String, in text: String) -> Substring? {
        var found: Substring?
        var rest = text[...]
        while let open = rest.firstRange(ofText: "<\(name)") {
            let afterName = open.upperBound
            guard afterName < rest.endIndex else { return found }
            if rest[afterName] == "/" {  // `<name/>`: an empty occurrence
                guard found == nil else { return nil }
                found = ""
                rest = rest[afterName...]
                continue
            }
            guard rest[afterName] == ">" || rest[afterName] == " " else {
                rest = rest[afterName...]
                continue  // a longer name with the same prefix
            }
            guard found == nil, let tagEnd = rest[afterName...].firstIndex(of: ">"),
                  let close = rest[rest.index(after: tagEnd)...].firstRange(ofText: "</\(name)>") else { return nil }
            found = rest[rest.index(after: tagEnd)..<close.lowerBound]
            rest = rest[close.upperBound...]
        }
        return found
    }

    /// Plain text only: nil if it contains markup or an entity we do not know.
    static func unescape<Text: StringProtocol>(_ raw: Text) -> String? {
        guard !raw.contains(Character("<")) else { return nil }
        var output = ""
        var rest = Substring(raw)
        while let ampersand = rest.firstIndex(of: "&") {
            output += rest[..<ampersand]
            guard let semicolon = rest[ampersand...].firstIndex(of: ";") else { return nil }
            let entity = rest[rest.index(after: ampersand)..<semicolon]
            switch entity {
            case "amp": output += "&"
            case "lt": output += "<"
            case "gt": output += ">"
            case "quot": output += "\""
            case "apos": output += "'"
            default:
                let isHex = entity.hasPrefix("#x") || entity.hasPrefix("#X")
                guard entity.hasPrefix("#"), let code = UInt32(entity.dropFirst(isHex ? 2 : 1), radix: isHex ? 16 : 10),
                      let scalar = Unicode.Scalar(code) else { return nil }
                output.unicodeScalars.append(scalar)
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return output + rest
    }
}
