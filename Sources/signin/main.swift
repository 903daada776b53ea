import LambdaAuth

/// Until the sign-in flow exists, `signin` verifies the ID token and answers with the identity it
/// proves (`{"identity": {...}}`), or with the contract's error.
struct VerifyOnlySignInHandler: RequestHandler {
    let verifier: IDTokenVerifier

    func handle(_ request: InvocationRequest, context: InvocationContext) throws -> InvocationResponse {
        guard case .string(let providerName)? = request.body["provider"] else {
            throw AuthError(.invalidRequest, "provider must be a string")
        }
        let provider = try ProviderName.parse(providerName)
        guard case .string(let idToken)? = request.body["idToken"], !idToken.isEmpty else {
            throw AuthError(.invalidRequest, "idToken must be a non-empty string")
        }
        let nonce: String?
        switch request.body["nonce"] {
        case nil, .null?: nonce = nil
        case .string(let value)?: nonce = value
        default: throw AuthError(.invalidRequest, "nonce must be a string")
        }
        let identity = try verifier.verify(idToken, provider: provider, nonce: nonce)
        context.logger.info("ID token verified", ["provider": .string(provider.rawValue)])
        return InvocationResponse(body: ["identity": identity.json])
    }
}

HandlerMain.run(name: "signin") { configuration, logger in
    VerifyOnlySignInHandler(verifier: IDTokenVerifier(configuration: configuration, httpClient: CurlHTTPClient(),
                                                      clock: configuration.clock, logger: logger))
}
