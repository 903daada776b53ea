/// `AUTH_CREDENTIALS=sts`: AWS STS AssumeRole.
func makeSTSCredentialIssuer(configuration: AuthConfiguration, httpClient: any HTTPClient,
                             random: any RandomSource) throws(AuthError) -> any CredentialIssuer {
    throw AuthError(.configError, "AUTH_CREDENTIALS=sts is not available in this build yet; use local")
}
