import LambdaAuth

/// The OpenAPI 3.1 description of the HTTP API the template deploys (contract section 16): every
/// catalogue route with its request and response bodies (contract sections 3, 7, 9, 10, 11), the
/// error body, and the bearer scheme on the routes the JWT authorizer guards. `Infra/openapi.json`
/// is this text, committed (a test compares them); `authctl serve` answers it at `/openapi.json`.
/// The dev identity provider's routes are serve's alone and not in it; every other route the
/// template deploys is (a test compares them with the translated template).
public enum OpenAPIDocument {
    public static var text: String { document.prettyPrinted() + "\n" }

    /// The template's routes to functions that are no handler of ours, by function: the example of
    /// the app's own API behind the authorizer (inline Python there, answered by serve too).
    public static let exampleRoutes: [String: HTTPRoute] = ["ExampleProtectedFunction": .get("/example/whoami", guarded: true)]

    public static var document: JSONValue {
        var paths: [String: [String: JSONValue]] = [:]
        let routes = HandlerCatalogue.all.flatMap { entry in entry.routes.map { (route: $0, function: entry.name) } }
            + exampleRoutes.map { (route: $0.value, function: $0.key) }
        for (route, function) in routes {
            paths[route.path, default: [:]][route.method.lowercased()] = operation(route, handler: function)
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "lambda-auth",
                "version": "1",
                "description": .string("Sign-in with Google, Apple, OpenID Connect providers, email codes and guests; sessions, refresh-token families and temporary AWS credentials. Errors are {\"error\": {...}} from the functions, or API Gateway's own {\"message\"} (404 for a route it does not have, 401 when its JWT authorizer refuses the access token)."),
            ],
            "paths": .object(paths.mapValues(JSONValue.object)),
            "components": ["schemas": .object(schemas), "securitySchemes": [
                "accessToken": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                                "description": "The access token of signin or refresh (tokens.accessToken), checked by API Gateway's JWT authorizer and again by the function."],
            ]],
        ]
    }

    /// What each route takes and answers beside the error statuses every route has.
    struct Operation {
        var summary: String
        var request: JSONValue?
        var requestRequired = true
        var success: (status: String, schema: JSONValue)
        var errorStatuses: [String]
        /// The success body's media type: JSON, except the revocation list (a compact JWS).
        var successType = "application/json"
    }

    static let commonErrors = ["400", "500", "503"]

    static let operations: [String: Operation] = [
        "POST /auth/signin": Operation(summary: "Sign in with an ID token, an email code or as a guest", request: ref("SignInRequest"),
                                       success: ("200", ref("SignInResponse")), errorStatuses: ["401", "403", "409", "429", "502"]),
        "POST /auth/refresh": Operation(summary: "Rotate a refresh token", request: ref("RefreshRequest"),
                                        success: ("200", ref("SessionResponse")), errorStatuses: ["401"]),
        "POST /auth/link": Operation(summary: "Link another identity to the caller", request: ref("LinkRequest"),
                                     success: ("200", ref("UserResponse")), errorStatuses: ["401", "409", "502"]),
        "DELETE /auth/link": Operation(summary: "Unlink one of the caller's identities", request: ref("UnlinkRequest"),
                                       success: ("200", ref("UserResponse")), errorStatuses: ["401", "409", "502"]),
        "POST /auth/signout": Operation(summary: "Sign out this session, the others, or all", request: ref("SignOutRequest"),
                                        requestRequired: false, success: ("200", ref("RevokedSessions")), errorStatuses: ["401"]),
        "GET /auth/sessions": Operation(summary: "The caller's active sessions, most recently active first", request: nil,
                                        success: ("200", ref("SessionList")), errorStatuses: ["401"]),
        "DELETE /auth/sessions": Operation(summary: "Revoke one of the caller's sessions", request: ref("RevokeSessionRequest"),
                                           success: ("200", ref("RevokedSessions")), errorStatuses: ["401", "404"]),
        "DELETE /auth/account": Operation(summary: "Delete the caller's account", request: ref("ReauthenticationRequest"),
                                          requestRequired: false, success: ("200", ref("DeletedAccount")), errorStatuses: ["401", "502"]),
        "POST /auth/delete-account": Operation(summary: "Delete the caller's account", request: ref("ReauthenticationRequest"),
                                               requestRequired: false, success: ("200", ref("DeletedAccount")), errorStatuses: ["401", "502"]),
        "GET /.well-known/openid-configuration": Operation(summary: "The issuer's discovery document", request: nil,
                                                           success: ("200", ref("DiscoveryDocument")), errorStatuses: []),
        "GET /.well-known/jwks.json": Operation(summary: "The public keys of the access tokens", request: nil,
                                                success: ("200", ref("JWKS")), errorStatuses: []),
        "GET /.well-known/revocations": Operation(summary: "The revocation list: a JWS signed with the access-token key (typ revocations+jwt)",
                                                  request: nil, success: ("200", ["type": "string"]),
                                                  errorStatuses: [], successType: "application/jwt"),
        "POST /auth/apple/notifications": Operation(summary: "Sign in with Apple's server-to-server notifications",
                                                    request: ref("AppleNotification"), success: ("200", ref("AppleNotificationHandled")),
                                                    errorStatuses: ["401"]),
        "POST /auth/otp/start": Operation(summary: "Send a sign-in code by email", request: ref("OneTimeCodeStartRequest"),
                                          success: ("202", ref("OneTimeCodeSent")), errorStatuses: ["429", "502"]),
        "GET /example/whoami": Operation(summary: "The template's example of the app's own API: the verified claims echoed",
                                         request: nil, success: ("200", ref("WhoAmI")), errorStatuses: ["401"]),
        "POST /auth/passkey": Operation(summary: "Passkeys: registration and sign-in options, register, list, delete",
                                        request: ref("PasskeyRequest"), success: ("200", ref("PasskeyResponse")),
                                        errorStatuses: ["401", "403", "404", "409", "429"]),
        "POST /auth/mfa": Operation(summary: "Second factor: TOTP enrolment and confirmation, a sign-in's challenge, step-up, status, "
                                        + "recovery codes, removal", request: ref("MFARequest"), success: ("200", ref("MFAResponse")),
                                    errorStatuses: ["401", "403", "409", "429"]),
    ]

    static func operation(_ route: HTTPRoute, handler: String) -> JSONValue {
        let key = "\(route.method) \(route.path)"
        let described = operations[key] ?? Operation(summary: key, request: nil, success: ("200", ["type": "object"]), errorStatuses: ["401"])
        var responses: [String: JSONValue] = [
            // A body that is not JSON is described by its media type alone: checkers (schemathesis)
            // would read a schema beside it as a JSON schema and try to parse the JWS as JSON.
            described.success.status: ["description": "Success", "content": .object([
                described.successType: described.successType == "application/json" ? ["schema": described.success.schema] : [:],
            ])],
        ]
        var errors = commonErrors + described.errorStatuses
        if route.guarded, !errors.contains("401") { errors.append("401") }
        for status in Set(errors).sorted() {
            var schema = ref(Int(status).map { errorStatuses.contains($0) ? "Error\($0)" : "ErrorBody" } ?? "ErrorBody")
            // The authorizer answers before the function runs, in API Gateway's own shape.
            if status == "401", route.guarded { schema = ["oneOf": [schema, ref("GatewayMessage")]] }
            responses[status] = ["description": .string(errorDescription(status)), "content": ["application/json": ["schema": schema]]]
        }
        var operation: [String: JSONValue] = [
            "operationId": .string(operationID(route)), "summary": .string(described.summary),
            "description": .string("Function: \(handler)."), "responses": .object(responses),
        ]
        if let request = described.request {
            operation["requestBody"] = ["required": .bool(described.requestRequired), "content": ["application/json": ["schema": request]]]
        }
        if route.guarded { operation["security"] = [["accessToken": []]] }
        return .object(operation)
    }

    static func operationID(_ route: HTTPRoute) -> String {
        let words = route.path.split { !$0.isLetter && !$0.isNumber }.map { $0.prefix(1).uppercased() + $0.dropFirst() }
        return route.method.lowercased() + words.joined()
    }

    static func errorDescription(_ status: String) -> String {
        switch status {
        case "400": "Invalid request (INVALID_REQUEST, UNSUPPORTED_PROVIDER, PROVIDER_NOT_CONFIGURED)"
        case "401": "A token or code was refused"
        case "403": "MFA_REQUIRED (with mfaToken and factors) or AAL2_REQUIRED"
        case "404": "SESSION_NOT_FOUND or PASSKEY_NOT_FOUND"
        case "409": "A conflict between identities"
        case "429": "RATE_LIMITED, with retryAfter and a retry-after header"
        case "500": "CONFIG_ERROR or INTERNAL"
        case "502": "PROVIDER_UNAVAILABLE: an identity provider's endpoint failed"
        default: "A dependency is unavailable (JWKS_UNAVAILABLE, STORE_UNAVAILABLE, CREDENTIALS_UNAVAILABLE); retryable"
        }
    }

    static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/" + name)] }

    static func object(_ properties: [String: JSONValue], required: [String] = []) -> JSONValue {
        var schema: [String: JSONValue] = ["type": "object", "properties": .object(properties)]
        if !required.isEmpty { schema["required"] = .array(required.map(JSONValue.string)) }
        return .object(schema)
    }

    static let string: JSONValue = ["type": "string"]
    static let nullableString: JSONValue = ["type": ["string", "null"]]
    static let timestamp: JSONValue = ["type": "string", "format": "date-time"]
    static let integer: JSONValue = ["type": "integer"]
    static let boolean: JSONValue = ["type": "boolean"]

    /// The error body with the codes answered with `status` (all of them without one).
    static func errorBody(status: Int?) -> JSONValue {
        let codes = ErrorCode.allCases.filter { status == nil || $0.status == status }.map(\.rawValue).sorted()
        var statusSchema = integer
        if let status { statusSchema = ["const": .number(status)] }
        return object(["error": object([
            "code": ["type": "string", "enum": .array(codes.map(JSONValue.string))], "message": string,
            "status": statusSchema, "retryable": boolean, "retryAfter": integer,
            "mfaToken": ["type": "string", "description": "MFA_REQUIRED: what the mfa challenge action takes"],
            "factors": ["type": "array", "items": ["type": "string", "enum": ["totp", "recovery"]]],
        ], required: ["code", "message", "status", "retryable"])], required: ["error"])
    }

    static let errorStatuses = Set(ErrorCode.allCases.map(\.status)).sorted()

    static var schemas: [String: JSONValue] {
        var errors: [String: JSONValue] = ["ErrorBody": errorBody(status: nil)]
        for status in errorStatuses { errors["Error\(status)"] = errorBody(status: status) }
        return errors.merging(namedSchemas) { $1 }
    }

    static var namedSchemas: [String: JSONValue] {
        [
            "GatewayMessage": object(["message": string], required: ["message"]),
            "WhoAmI": object(["userId": string, "sessionId": string,
                              "appMetadata": ["type": "object", "description": "the app_metadata claim, parsed"],
                              "claims": ["type": "object", "description": "every claim as API Gateway passes it (as strings)"]],
                             required: ["userId", "sessionId", "appMetadata", "claims"]),
            "Device": object(["id": string, "name": string, "platform": string]),
            "SignInRequest": object([
                "provider": ["type": "string", "description": "google, apple, a configured OpenID Connect provider's name, email or guest"],
                "idToken": string, "nonce": string, "device": ref("Device"), "profile": object(["name": string]),
                "authorizationCode": ["type": "string", "description": "apple only: exchanged for Apple's refresh token"],
                "email": ["type": "string", "description": "provider email"], "code": ["type": "string", "description": "provider email: the six digits sent"],
                "credential": ["type": "object", "description": "provider passkey: an AuthenticationResponseJSON (WebAuthn Level 3)"],
            ], required: ["provider"]),
            "RefreshRequest": object(["refreshToken": string], required: ["refreshToken"]),
            "LinkRequest": object(["provider": string, "idToken": string, "nonce": string, "email": string, "code": string,
                                   "credential": ["type": "object"]], required: ["provider"]),
            "UnlinkRequest": object(["provider": string], required: ["provider"]),
            "SignOutRequest": object(["refreshToken": string, "scope": ["type": "string", "enum": ["session", "others", "global"]]]),
            "RevokeSessionRequest": object(["sessionId": string], required: ["sessionId"]),
            "ReauthenticationRequest": object(["provider": string, "idToken": string, "nonce": string, "email": string, "code": string,
                                               "credential": ["type": "object"]]),
            "PasskeyRequest": object([
                "action": ["type": "string", "enum": ["register-options", "register", "list", "delete", "login-options"]],
                "credential": ["type": "object", "description": "register: a RegistrationResponseJSON (WebAuthn Level 3)"],
                "name": string, "passkeyId": string,
            ], required: ["action"]),
            "Passkey": object(["id": string, "name": string, "createdAt": timestamp, "lastUsedAt": ["type": ["string", "null"], "format": "date-time"]],
                              required: ["id", "name", "createdAt", "lastUsedAt"]),
            "PasskeyResponse": ["oneOf": [
                object(["publicKey": ["type": "object"]], required: ["publicKey"]),
                object(["passkey": ref("Passkey")], required: ["passkey"]),
                object(["passkeys": ["type": "array", "items": ref("Passkey")]], required: ["passkeys"]),
                object(["deleted": ["const": true]], required: ["deleted"]),
            ]],
            "MFARequest": object([
                "action": ["type": "string", "enum": ["totp-enroll", "totp-confirm", "challenge", "step-up", "status", "recovery-codes", "totp-remove"]],
                "code": ["type": "string", "description": "totp-confirm, challenge, step-up: the six digits of the authenticator app"],
                "recoveryCode": ["type": "string", "description": "challenge, step-up: one of the recovery codes instead of a code"],
                "mfaToken": ["type": "string", "description": "challenge: the mfaToken of MFA_REQUIRED"],
                "device": ref("Device"), "provider": string,
            ], required: ["action"]),
            "MFAResponse": ["anyOf": [
                object(["secret": string, "uri": string], required: ["secret", "uri"]),
                object(["recoveryCodes": ["type": "array", "items": string]], required: ["recoveryCodes"]),
                ref("SignInResponse"),
                object(["session": ref("Session"), "tokens": object(["accessToken": string, "tokenType": ["const": "Bearer"], "expiresIn": integer],
                                                                    required: ["accessToken", "tokenType", "expiresIn"])],
                       required: ["session", "tokens"]),
                object(["totp": boolean, "recoveryCodesLeft": integer], required: ["totp", "recoveryCodesLeft"]),
                object(["removed": ["const": true]], required: ["removed"]),
            ]],
            "AppleNotification": object(["payload": string], required: ["payload"]),
            "OneTimeCodeStartRequest": object(["email": string], required: ["email"]),
            "Identity": object(["provider": string, "subject": string, "email": nullableString, "linkedAt": timestamp,
                                "emailDeliverable": boolean], required: ["provider", "subject"]),
            "User": object([
                "id": string, "email": nullableString, "emailVerified": boolean, "displayName": nullableString, "pictureUrl": nullableString,
                "identities": ["type": "array", "items": ref("Identity")], "createdAt": timestamp, "lastSignInAt": timestamp,
                "isGuest": boolean, "appMetadata": ["type": "object"],
            ], required: ["id", "identities"]),
            "Session": object(["id": string, "createdAt": timestamp], required: ["id"]),
            "Tokens": object(["accessToken": string, "tokenType": ["const": "Bearer"], "expiresIn": integer, "refreshToken": string,
                              "refreshTokenExpiresIn": integer], required: ["accessToken", "tokenType", "expiresIn", "refreshToken"]),
            "Credentials": object(["accessKeyId": string, "secretAccessKey": string, "sessionToken": string, "expiration": timestamp],
                                  required: ["accessKeyId", "secretAccessKey", "sessionToken", "expiration"]),
            "SessionResponse": object(["user": ref("User"), "session": ref("Session"), "tokens": ref("Tokens"), "credentials": ref("Credentials")],
                                      required: ["user", "session", "tokens", "credentials"]),
            "SignInResponse": object(["user": ref("User"), "isNewUser": boolean, "session": ref("Session"), "tokens": ref("Tokens"),
                                      "credentials": ref("Credentials")], required: ["user", "isNewUser", "session", "tokens", "credentials"]),
            "UserResponse": object(["user": ref("User")], required: ["user"]),
            "RevokedSessions": object(["revokedSessions": integer], required: ["revokedSessions"]),
            "SessionList": object(["sessions": ["type": "array", "items": object([
                "id": string, "device": ["type": ["object", "null"]], "createdAt": timestamp, "lastActiveAt": timestamp, "current": boolean,
            ], required: ["id", "current"])]], required: ["sessions"]),
            "DeletedAccount": object(["deleted": ["const": true], "userId": string], required: ["deleted", "userId"]),
            "DiscoveryDocument": object(["issuer": string, "jwks_uri": string,
                                         "id_token_signing_alg_values_supported": ["type": "array", "items": string]],
                                        required: ["issuer", "jwks_uri"]),
            "JWKS": object(["keys": ["type": "array", "items": ["type": "object"]]], required: ["keys"]),
            "AppleNotificationHandled": object(["handled": string], required: ["handled"]),
            "OneTimeCodeSent": object(["sent": boolean, "expiresIn": integer], required: ["sent", "expiresIn"]),
        ]
    }
}
