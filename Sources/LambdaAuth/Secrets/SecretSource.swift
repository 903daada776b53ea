/// `AUTH_SECRETS=secretsmanager:<id>` or `ssm:<parameter name>`: a JSON object of secret
/// variables (`SecretVariables.names`) read once at process start and added to the environment.
///
/// Every failure is a CONFIG_ERROR that names the source (`AUTH_SECRETS=ssm:/x: parameter not
/// found`) and never a value: neither the secret's text nor a parse error quoting it.
public struct SecretSource: Sendable, Equatable {
    public enum Store: String, Sendable {
        case secretsManager = "secretsmanager"
        case ssm

        /// The JSON protocol of each (both JSON 1.1).
        public var service: AWSJSONClient.Service {
            switch self {
            case .secretsManager:
                return AWSJSONClient.Service(signingName: "secretsmanager", targetPrefix: "secretsmanager.", displayName: "Secrets Manager")
            case .ssm:
                return AWSJSONClient.Service(signingName: "ssm", targetPrefix: "AmazonSSM.", displayName: "SSM")
            }
        }
    }

    public let store: Store
    public let name: String

    /// `AUTH_SECRETS=…` as it appears in messages.
    public var label: String { "AUTH_SECRETS=\(store.rawValue):\(name)" }

    public init(_ value: String) throws(AuthError) {
        guard let colon = value.firstIndex(of: ":"), let store = Store(rawValue: String(value[..<colon])),
              value.index(after: colon) < value.endIndex else {
            throw AuthError(.configError, "AUTH_SECRETS must be secretsmanager:<secret id> or ssm:<parameter name>")
        }
        self.store = store
        self.name = String(value[value.index(after: colon)...])
        guard name.utf8.count <= 2048 else { throw AuthError(.configError, "AUTH_SECRETS names a secret longer than 2048 bytes") }
    }

    /// The secret's text: one GetSecretValue (SecretString) or GetParameter (WithDecryption).
    public func fetch(endpoint: String?, region: String, credentials: AWSCredentials, http: any HTTPClient) throws(AuthError) -> String {
        let client = AWSJSONClient(service: store.service, endpoint: endpoint ?? "https://\(store.rawValue).\(region).amazonaws.com",
                                   region: region, credentials: credentials, http: http)
        do {
            switch store {
            case .secretsManager:
                let answer = try client.call("GetSecretValue", ["SecretId": .string(name)])
                guard let text = answer["SecretString"]?.stringValue else {
                    throw failure("the secret has no SecretString (a binary secret cannot hold variables)")
                }
                return text
            case .ssm:
                let answer = try client.call("GetParameter", ["Name": .string(name), "WithDecryption": true])
                guard let text = answer["Parameter"]?["Value"]?.stringValue else {
                    throw failure("GetParameter answered without Parameter.Value")
                }
                return text
            }
        } catch let error as AuthError {
            throw error
        } catch let error as AWSCallError {
            throw failure(Self.reason(error))
        } catch {
            throw failure(String(describing: error))
        }
    }

    static func reason(_ error: AWSCallError) -> String {
        guard case .refused(let answer) = error else { return "cannot be read (\(error.description))" }
        switch answer.type {
        case "ResourceNotFoundException": return "secret not found"
        case "ParameterNotFound": return "parameter not found"
        case "AccessDeniedException", "AccessDenied", "UnrecognizedClientException", "InvalidSignatureException":
            return "access denied (\(answer.type))"
        default: return "refused (\(answer.description))"
        }
    }

    func failure(_ reason: String) -> AuthError {
        AuthError(.configError, "\(label): \(reason)")
    }

    /// The variables the secret's text sets, each checked against the allow-list and `environment`
    /// (a variable set in both places is refused: which one wins would be a guess).
    public func variables(from text: String, environment: [String: String]) throws(AuthError) -> [String: String] {
        guard let document = try? JSONValue.parse(Array(text.utf8)), case .object(let members) = document else {
            throw failure("the value is not a JSON object")
        }
        var variables: [String: String] = [:]
        for (name, value) in members {
            let shown = String(name.prefix(64))
            guard SecretVariables.names.contains(name) else {
                throw failure("\(shown) is not a variable a secret may set (\(SecretVariables.names.joined(separator: ", ")))")
            }
            guard let text = value.stringValue else { throw failure("\(name) must be a string") }
            if let inherited = environment[name], !inherited.isEmpty {
                throw failure("\(name) is also set in the environment; set it in one place")
            }
            variables[name] = text
        }
        return variables
    }
}
