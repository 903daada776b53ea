/// Region and credentials for AWS calls, from the configuration (`AWS_REGION`, `AWS_*` keys).
enum AWSEnvironment {
    static func require(_ configuration: AuthConfiguration, for purpose: String) throws(AuthError) -> (String, AWSCredentials) {
        try require(region: configuration.awsRegion, credentials: configuration.awsCredentials, for: purpose)
    }

    /// Straight from the environment, for what is read before the configuration (AUTH_SECRETS).
    static func require(_ reader: EnvironmentReader, for purpose: String) throws(AuthError) -> (String, AWSCredentials) {
        try require(region: region(reader), credentials: credentials(reader), for: purpose)
    }

    static func region(_ reader: EnvironmentReader) -> String? {
        reader.string("AWS_REGION") ?? reader.string("AWS_DEFAULT_REGION")
    }

    static func credentials(_ reader: EnvironmentReader) -> AWSCredentials? {
        guard let accessKey = reader.string("AWS_ACCESS_KEY_ID"), let secretKey = reader.string("AWS_SECRET_ACCESS_KEY") else { return nil }
        return AWSCredentials(accessKeyID: accessKey, secretAccessKey: secretKey, sessionToken: reader.string("AWS_SESSION_TOKEN"))
    }

    static func require(region: String?, credentials: AWSCredentials?, for purpose: String) throws(AuthError) -> (String, AWSCredentials) {
        guard let region else {
            throw AuthError(.configError, "AWS_REGION is required with \(purpose)")
        }
        guard let credentials else {
            throw AuthError(.configError, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required with \(purpose)")
        }
        return (region, credentials)
    }
}
