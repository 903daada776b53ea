import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// `Infra/template.yaml` as CloudFormation deploys it: translated by AWS's SAM translator
/// (Tests/Scripts/template_check.py), its intrinsics resolved for a parameter set, then checked:
/// every function's environment names only variables docs/configuration.md documents, the JWT authorizer's
/// issuer and audience are what the functions sign, the functions require RS256 keys, and the
/// API's routes are the handler catalogue's, each behind the authorizer exactly where it says.
@Suite struct TemplateTranslationTests {
    static let documents = ["docs/configuration.md"]

    /// `handler: METHOD path [guarded]` for every route of the catalogue, and the template's one
    /// route to a function that is no handler: the example of the app's own API.
    static let expectedRoutes = Set(HandlerCatalogue.all.flatMap { entry in entry.routes.map { "\(entry.name): \($0)" } })
        .union(OpenAPIDocument.exampleRoutes.map { "\($0.key): \($0.value)" })

    /// What differs between the translated template's routes and `expectedRoutes`, both ways.
    static func routeMismatches(_ translated: JSONValue) -> [String] {
        let deployed = Set((translated["routes"]?.arrayValue ?? []).map { route in
            let target = route["handler"]?.stringValue ?? route["function"]?.stringValue ?? "?"
            let catalogued = HTTPRoute(method: route["method"]?.stringValue ?? "?", path: route["path"]?.stringValue ?? "?",
                                       guarded: route["authorizer"] == true)
            return "\(target): \(catalogued)"
        })
        return expectedRoutes.subtracting(deployed).sorted().map { "not in the template: " + $0 }
            + deployed.subtracting(expectedRoutes).sorted().map { "not in the catalogue: " + $0 }
    }

    static func translate(_ template: String = TestSupport.packageRoot + "/Infra/template.yaml",
                          parameters: JSONValue) throws -> JSONValue {
        let handlers = JSONValue.array(HandlerNames.all.map { .string($0) })
        return try TestSupport.pythonPeer("template_check.py", [template, parameters.serialized(), handlers.serialized()]
                                          + documents.map { TestSupport.packageRoot + "/" + $0 })
    }

    @Test(arguments: [
        (["Issuer": "https://auth.example.test"], "https://auth.example.test"),
        (["Issuer": "https://auth.example.test", "AccessTokenAudience": "example-api"], "example-api"),
        (["Issuer": "https://auth.example.test", "AccessTokenAudience": "example-api", "Authorizer": "lambda"], "example-api"),
    ])
    func theTranslatedTemplateWiresEveryHandlerToTheAuthorizersIssuer(_ parameters: [String: String], _ audience: String) throws {
        let translated = try Self.translate(parameters: .object(parameters.mapValues { .string($0) }))
        #expect(translated["problems"] == [], "\(translated["problems"]?.serialized() ?? "")")
        // Authorizer=lambda puts our authorizer function, as API Gateway's payload 2.0 simple
        // responses call it with no result cache, in front of the same routes (contract section 20).
        let lambda = parameters["Authorizer"] == "lambda"
        #expect(translated["authorizer"]?["type"] == (lambda ? "request" : "jwt"))
        if lambda {
            #expect(translated["authorizer"]?["handler"] == "authorizer" && translated["authorizer"]?["resultTtl"] == 0)
        }
        #expect(translated["authorizer"]?["issuer"] == "https://auth.example.test")
        #expect(translated["authorizer"]?["audiences"] == [.string(audience)])
        #expect(Self.routeMismatches(translated) == [])
        // The API description describes every route the template deploys (contract section 16).
        let deployed = Set((translated["routes"]?.arrayValue ?? []).compactMap { route -> String? in
            guard let method = route["method"]?.stringValue, let path = route["path"]?.stringValue else { return nil }
            return method.lowercased() + " " + path
        })
        let described = Set((OpenAPIDocument.document["paths"]?.objectValue ?? [:]).flatMap { path, operations in
            (operations.objectValue ?? [:]).keys.map { $0 + " " + path }
        })
        #expect(!deployed.isEmpty)
        #expect(deployed == described, "deployed, not described: \(deployed.subtracting(described).sorted()); described, not deployed: \(described.subtracting(deployed).sorted())")
        // The authorizer function is deployed with Authorizer=lambda only.
        #expect((translated["functions"]?["authorizer"] != nil) == lambda)
        for handler in HandlerNames.all where lambda || handler != "authorizer" {
            let function = translated["functions"]?[handler]
            #expect(function?["environment"]?["AUTH_SIGNING_ALGORITHM"] == "RS256", "\(handler)")
            #expect(function?["environment"]?["AUTH_ISSUER"] == "https://auth.example.test", "\(handler)")
            #expect(function?["environment"]?["AUTH_ACCESS_TOKEN_AUDIENCE"] == .string(audience), "\(handler)")
        }
    }

    /// The check itself can fail: a template with each mistake it looks for.
    /// The Hooks parameter reaches the two functions that call hooks, and no other (contract section 19).
    @Test func onlySigninAndRefreshAreGivenTheHooks() throws {
        let hooks = #"{"beforeSignIn": {"lambda": "banned-users"}}"#
        let translated = try Self.translate(parameters: [
            "Issuer": "https://auth.example.test", "Hooks": .string(hooks),
            "HookFunctionArns": "arn:aws:lambda:us-east-1:123456789012:function:banned-users",
        ])
        #expect(translated["problems"] == [], "\(translated["problems"]?.serialized() ?? "")")
        for handler in HandlerNames.all where handler != "authorizer" {
            let value = translated["functions"]?[handler]?["environment"]?["AUTH_HOOKS"]
            #expect(value == (["signin", "refresh"].contains(handler) ? .string(hooks) : nil), "\(handler): \(value?.serialized() ?? "none")")
        }
    }

    @Test func aTemplateWithMistakesIsCaught() throws {
        let directory = TestSupport.temporaryDirectory("template")
        defer { TestSupport.removeTree(directory) }
        var text = String(decoding: try FileSystem.readFile(TestSupport.packageRoot + "/Infra/template.yaml"), as: UTF8.self)
        let mistakes = [
            ("        AUTH_SIGNING_ALGORITHM: RS256\n", "        AUTH_SIGNING_ALGORITHM: ES256\n        AUTH_SOMETHING_NEW: \"on\"\n"),
            ("                  jwtConfiguration:\n                    issuer: !Ref Issuer\n",
             "                  jwtConfiguration:\n                    issuer: https://elsewhere.example.test\n"),
            ("          Properties: { ApiId: !Ref AuthApi, Path: /auth/otp/start, Method: POST }\n", ""),
            ("          /auth/sessions:\n            get: { security: [{ AccessToken: [] }], responses: {} }\n",
             "          /auth/sessions:\n            get: { responses: {} }\n"),
            ("Path: /auth/refresh, Method: POST }", "Path: /auth/refresh, Method: PUT }"),
        ]
        for (original, mistaken) in mistakes {
            try #require(text.contains(original), "the template no longer holds \(original)")
            text = text.replacingOccurrences(of: original, with: mistaken)
        }
        text = text.replacingOccurrences(of: "      Events:\n        Start:\n          Type: HttpApi\n", with: "")
        try FileSystem.writeAtomically(directory + "/template.yaml", Array(text.utf8))
        let translated = try Self.translate(directory + "/template.yaml", parameters: ["Issuer": "https://auth.example.test"])
        let problems = (translated["problems"]?.arrayValue ?? []).compactMap(\.stringValue)
        #expect(problems.contains { $0.contains("undocumented variables: AUTH_SOMETHING_NEW") })
        #expect(problems.contains { $0.hasPrefix("signin does not require RS256") })
        #expect(problems.contains { $0.hasPrefix("signin signs iss 'https://auth.example.test'; the authorizer requires 'https://elsewhere.example.test'") })
        #expect(problems.contains("otp-start has no route"), "\(problems)")
        #expect(Self.routeMismatches(translated) == [
            "not in the template: otp-start: POST /auth/otp/start", "not in the template: refresh: POST /auth/refresh",
            "not in the template: sessions: GET /auth/sessions guarded",
            "not in the catalogue: refresh: PUT /auth/refresh", "not in the catalogue: sessions: GET /auth/sessions",
        ])
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        var result = "", rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
