import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

@Suite struct STSCredentialIssuerTests {
    static let role = "arn:aws:iam::123456789012:role/lambda-auth-users"

    func issuer(endpoint: String, ttl: Int64 = 900) -> STSCredentialIssuer {
        STSCredentialIssuer(roleARN: STSCredentialIssuerTests.role, bucket: "photos-bucket", durationSeconds: ttl, endpoint: endpoint,
                            region: MotoServer.region, credentials: MotoServer.credentials, http: CurlHTTPClient())
    }

    /// Against moto's STS: the whole AssumeRole round trip, and the credentials' shape.
    @Test func assumesTheRoleOnMoto() throws {
        let moto = try MotoServer.shared()
        var environment = moto.environment(table: "unused-table")
        environment["AUTH_CREDENTIALS"] = "sts"
        environment["AUTH_STS_ROLE_ARN"] = STSCredentialIssuerTests.role
        environment["AUTH_USER_BUCKET"] = "photos-bucket"
        environment["AUTH_CREDENTIALS_TTL"] = "1800"
        environment["AUTH_SIGNING_KEY"] = AccessTokenKey.generate().pemRepresentation
        let issuer = try STSCredentialIssuer(settings: #require(AuthConfiguration.fromEnvironment(environment).stsSettings))
        #expect(issuer.durationSeconds == 1800 && issuer.endpoint == moto.endpoint + "/")
        let now = SystemClock().nowSeconds
        let credentials = try issuer.issue(userID: "u_7Yq-2", now: now)

        let accessKey = Array(credentials.accessKeyID.utf8)
        #expect(credentials.accessKeyID.hasPrefix("ASIA") && accessKey.count == 20)
        #expect(accessKey.dropFirst(4).allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x32 && $0 <= 0x37) },
                "\(credentials.accessKeyID) is not ASIA + 16 of A-Z2-7")
        #expect(credentials.secretAccessKey.utf8.count == 40)
        #expect(credentials.sessionToken.utf8.count >= 16)
        #expect(abs(credentials.expiration - (now + 1800)) <= 120, "moto honours DurationSeconds")
        #expect(credentials.json["expiration"]?.stringValue?.hasSuffix("Z") == true)
    }

    @Test func sendsTheScopedSignedAssumeRoleRequest() throws {
        let server = try LoopbackHTTPServer { _ in .init(text: STSCredentialIssuerTests.success(token: "tok&amp;en&#x2F;&#43;=")) }
        defer { server.stop() }
        let credentials = try issuer(endpoint: server.baseURL, ttl: 3600).issue(userID: "user-42", now: 0)
        #expect(credentials == TemporaryCredentials(accessKeyID: "ASIAEXAMPLE234567ABC", secretAccessKey: String(repeating: "S", count: 40),
                                                    sessionToken: "tok&en/+=", expiration: 1_767_229_200))

        let request = try #require(server.requests.first)
        #expect(request.method == "POST" && request.path == "/")
        #expect(request.headers["content-type"] == "application/x-www-form-urlencoded; charset=utf-8")
        let authorization = try #require(request.headers["authorization"].flatMap(SigV4.Authorization.init(header:)))
        #expect(authorization.service == "sts" && authorization.accessKeyID == "testing")
        let form = STSCredentialIssuerTests.decodeForm(request.bodyText)
        #expect(form["Action"] == "AssumeRole" && form["Version"] == "2011-06-15")
        #expect(form["RoleArn"] == STSCredentialIssuerTests.role)
        #expect(form["RoleSessionName"] == "lambda-auth-user-42")
        #expect(form["DurationSeconds"] == "3600")
        #expect(form["Tags.member.1.Key"] == "userId" && form["Tags.member.1.Value"] == "user-42")
        let policy = try JSONValue.parse(try #require(form["Policy"]))
        #expect(policy == [
            "Version": "2012-10-17",
            "Statement": [
                ["Sid": "OwnObjects", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                 "Resource": "arn:aws:s3:::photos-bucket/users/user-42/*"],
                ["Sid": "ListOwnPrefix", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::photos-bucket",
                 "Condition": ["StringLike": ["s3:prefix": ["users/user-42/", "users/user-42/*"]]]],
            ],
        ])
    }

    @Test func roleSessionNamesAreValidAndDeterministic() {
        let valid = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+=,.@-".utf8)
        for userID in ["a", "u_7Yq-2", String(repeating: "x", count: 52), String(repeating: "x", count: 53), "ü ser/id", "*"] {
            let name = STSCredentialIssuer.roleSessionName(userID: userID)
            #expect((2...64).contains(name.utf8.count) && name.utf8.allSatisfy(valid.contains), "\(name)")
            #expect(name == STSCredentialIssuer.roleSessionName(userID: userID))
        }
        #expect(STSCredentialIssuer.roleSessionName(userID: String(repeating: "x", count: 52)) == "lambda-auth-" + String(repeating: "x", count: 52))
        #expect(STSCredentialIssuer.roleSessionName(userID: "ü ser/id").hasPrefix("lambda-auth-h"))
        #expect(STSCredentialIssuer.roleSessionName(userID: "a/b") != STSCredentialIssuer.roleSessionName(userID: "a/c"))
    }

    @Test func userIDsThatWouldWidenThePolicyAreRefused() throws {
        let server = try LoopbackHTTPServer { _ in .init(text: STSCredentialIssuerTests.success(token: "t")) }
        defer { server.stop() }
        for userID in ["*", "a?b", "", "a/b", "../x"] {
            #expect(throws: AuthError.self) { try issuer(endpoint: server.baseURL).issue(userID: userID, now: 0) }
        }
        #expect(server.requestCount == 0)
    }

    @Test(arguments: [
        ("AccessDenied", 403, false), ("MalformedPolicyDocument", 400, false), ("ValidationError", 400, false),
        ("Throttling", 400, true), ("InternalFailure", 500, true), ("ServiceUnavailable", 503, true),
    ])
    func errorsAreCredentialsUnavailableRetryableWhereSTSSaysSo(code: String, status: Int, retryable: Bool) throws {
        let body = """
            <ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>\(code)</Code>\
            <Message>not &lt;allowed&gt;</Message></Error><RequestId>r</RequestId></ErrorResponse>
            """
        let server = try LoopbackHTTPServer { _ in .init(status: status, text: body) }
        defer { server.stop() }
        do {
            _ = try issuer(endpoint: server.baseURL).issue(userID: "u1", now: 0)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .credentialsUnavailable && error.status == 503)
            #expect(error.retryable == retryable, "\(code)")
            #expect(error.detail?.contains("\(code): not <allowed>") == true, "\(error.detail ?? "")")
            #expect(!error.message.contains(code), "STS's words stay in the log")
        }
    }

    @Test func connectionFailuresAreRetryable() throws {
        let server = try LoopbackHTTPServer { _ in .drop }
        defer { server.stop() }
        do {
            _ = try issuer(endpoint: server.baseURL).issue(userID: "u1", now: 0)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .credentialsUnavailable && error.retryable)
        }
    }

    @Test func malformedAnswersAreRefusedStrictly() throws {
        let credentials = "<AccessKeyId>ASIAEXAMPLE234567ABC</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken>"
        let expiration = "<Expiration>2026-01-01T01:00:00Z</Expiration>"
        let bodies = [
            "",
            "not xml",
            "<AssumeRoleResponse><AssumeRoleResult></AssumeRoleResult></AssumeRoleResponse>",
            "<AssumeRoleResult><Credentials>\(credentials)</Credentials></AssumeRoleResult>",  // no Expiration
            "<AssumeRoleResult><Credentials>\(credentials)<Expiration>tomorrow</Expiration></Credentials></AssumeRoleResult>",
            "<AssumeRoleResult><Credentials>\(credentials)\(expiration)<SessionToken>u</SessionToken></Credentials></AssumeRoleResult>",
            "<AssumeRoleResult><Credentials>\(credentials.replacingOccurrences(of: "<SessionToken>t", with: "<SessionToken>&bogus;"))\(expiration)</Credentials></AssumeRoleResult>",
            "<AssumeRoleResult><Credentials>\(credentials.replacingOccurrences(of: "ASIAEXAMPLE234567ABC", with: "asia<b>x</b>"))\(expiration)</Credentials></AssumeRoleResult>",
            "<AssumeRoleResult><Credentials>\(credentials)\(expiration)</Credentials></AssumeRoleResult><AssumeRoleResult/>",
        ]
        for body in bodies {
            let server = try LoopbackHTTPServer { _ in .init(text: body) }
            defer { server.stop() }
            do {
                let issued = try issuer(endpoint: server.baseURL).issue(userID: "u1", now: 0)
                Issue.record("accepted \(body): \(issued.accessKeyID)")
            } catch {
                #expect(error.code == .credentialsUnavailable, "\(body)")
            }
        }
        // The same pieces, well formed, are accepted: the refusals above are about the defects.
        let server = try LoopbackHTTPServer { _ in .init(text: "<AssumeRoleResult><Credentials>\(credentials)\(expiration)</Credentials></AssumeRoleResult>") }
        defer { server.stop() }
        #expect(try issuer(endpoint: server.baseURL).issue(userID: "u1", now: 0).sessionToken == "t")
    }

    @Test func configurationNamesWhatIsMissing() throws {
        let base = ["AUTH_CREDENTIALS": "sts", "AUTH_STS_ROLE_ARN": STSCredentialIssuerTests.role, "AUTH_USER_BUCKET": "b",
                    "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"]
        let settings = try #require(AuthConfiguration.fromEnvironment(base).stsSettings)
        do {
            _ = try STSCredentialIssuer(settings: settings)
            Issue.record("a missing AWS_REGION was accepted")
        } catch {
            #expect(error.code == .configError && error.message.contains("AWS_REGION"))
        }
        var regional = base
        regional["AWS_REGION"] = "eu-central-1"
        #expect(try STSCredentialIssuer(settings: #require(AuthConfiguration.fromEnvironment(regional).stsSettings)).endpoint == "https://sts.eu-central-1.amazonaws.com/")
    }

    static func success(token: String) -> String {
        """
        <AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
          <AssumeRoleResult>
            <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>
            <Credentials>
              <AccessKeyId>ASIAEXAMPLE234567ABC</AccessKeyId>
              <SecretAccessKey>\(String(repeating: "S", count: 40))</SecretAccessKey>
              <SessionToken>\(token)</SessionToken>
              <Expiration>2026-01-01T01:00:00.123Z</Expiration>
            </Credentials>
            <PackedPolicySize>12</PackedPolicySize>
          </AssumeRoleResult>
          <ResponseMetadata><RequestId>c6104cbe</RequestId></ResponseMetadata>
        </AssumeRoleResponse>
        """
    }

    static func decodeForm(_ body: String) -> [String: String] {
        var form: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            form[SigV4.percentDecode(parts[0]) ?? ""] = parts.count > 1 ? SigV4.percentDecode(parts[1]) : ""
        }
        return form
    }
}

private extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
