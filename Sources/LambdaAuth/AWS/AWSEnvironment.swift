/// Region and credentials for AWS calls, from the configuration (`AWS_REGION`, `AWS_*` keys).
enum AWSEnvironment {
    static func require(_ configuration: AuthConfiguration, for purpose: String) throws(AuthError) -> (String, AWSCredentials) {
        guard let region = configuration.awsRegion else {
            throw AuthError(.configError, "AWS_REGION is required with \(purpose)")
        }
        guard let credentials = configuration.awsCredentials else {
            throw AuthError(.configError, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required with \(purpose)")
        }
        return (region, credentials)
    }
}
