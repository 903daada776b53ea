import LambdaAuth
import LambdaAuthTooling
import LambdaAuthTestSupport
import Testing

/// `authctl replay` with a scenario's `oidcIssuers`: the tokens it mints for a configured provider
/// verify only where the configuration says they should, and a scenario that cannot mint what it
/// asks for stops with the reason rather than replaying something else.
@Suite final class ReplayOIDCIssuerTests {
    let directory = TestSupport.temporaryDirectory("replay-oidc-issuers")

    deinit { TestSupport.removeTree(directory) }

    static let tenant = "3f1c2a54-7e0b-4c8d-9a61-2b5e8d4f6c10"

    /// A one-step sign-in scenario with a `{tenantid}` provider allowing only `tenant`.
    func replay(idToken: String, expect: JSONValue, oidcIssuers: JSONValue = [["name": "microsoft", "keysDeclareAlgorithm": false]],
                algorithms: JSONValue = ["RS256"]) throws -> ProcessRunner.Output {
        let scenario: JSONValue = [
            "description": "replay test", "now": "2026-11-02T09:00:00Z", "oidcIssuers": oidcIssuers,
            "environment": ["AUTH_OIDC_PROVIDERS": [[
                "name": "microsoft", "issuer": "{{oidcIssuer microsoft}}/{tenantid}/v2.0", "jwksUri": "{{oidcIssuer microsoft}}/keys",
                "audiences": ["app"], "tenants": [.string(ReplayOIDCIssuerTests.tenant)], "algorithms": algorithms,
            ]]],
            "steps": [["handler": "signin", "event": ["provider": "microsoft", "idToken": .string(idToken)], "expect": expect]],
        ]
        let path = directory + "/scenario.json"
        try FileSystem.writeAtomically(path, scenario.serializedBytes())
        return try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["replay", "--verbose", path], environment: [:])
    }

    @Test func aTokenOfTheAllowedTenantSignsInAndAnotherTenantsIsRefused() throws {
        let allowed = try replay(idToken: "{{idToken microsoft sub=s1 tid=\(ReplayOIDCIssuerTests.tenant)}}", expect: ["status": 200])
        #expect(allowed.exitCode == 0 && allowed.stdoutText.contains("replay: 1 passed"), "\(allowed.stdoutText) \(allowed.stderrText)")
        let other = try replay(idToken: "{{idToken microsoft sub=s1 tid=0b7d6e3a-5c1f-4a2e-8d39-71f0c4b2e9a6}}",
                               expect: ["status": 401, "error": "INVALID_ISSUER"])
        #expect(other.exitCode == 0, "\(other.stdoutText)")
        // The allowed tenant's issuer with another tid: `iss=/PATH` is on the stand-in's server.
        let mixed = try replay(idToken: "{{idToken microsoft sub=s1 tid=other iss=/\(ReplayOIDCIssuerTests.tenant)/v2.0}}",
                               expect: ["status": 200])
        #expect(mixed.exitCode == 1 && mixed.stdoutText.contains("status: expected 200, got 401"), "\(mixed.stdoutText)")
    }

    @Test func aPS256TokenVerifiesUnderAKeyWithoutAlg() throws {
        let output = try replay(idToken: "{{idToken microsoft sub=s1 tid=\(ReplayOIDCIssuerTests.tenant) alg=PS256}}", expect: ["status": 200],
                                oidcIssuers: [["name": "microsoft", "keysDeclareAlgorithm": false, "algorithms": ["RS256", "PS256"]]],
                                algorithms: ["RS256", "PS256"])
        #expect(output.exitCode == 0, "\(output.stdoutText) \(output.stderrText)")
    }

    @Test func whatCannotBeMintedStopsTheReplayWithItsReason() throws {
        let noTenant = try replay(idToken: "{{idToken microsoft sub=s1}}", expect: ["status": 200])
        #expect(noTenant.exitCode == 1 && noTenant.stderrText.contains("its issuer has {tenantid}; say tid="), "\(noTenant.stderrText)")
        let unpublished = try replay(idToken: "{{idToken microsoft sub=s1 tid=t alg=PS256}}", expect: ["status": 200])
        #expect(unpublished.exitCode == 1 && unpublished.stderrText.contains("publishes no key for PS256"), "\(unpublished.stderrText)")
        let noIssuer = try replay(idToken: "{{idToken okta sub=s1}}", expect: ["status": 200], oidcIssuers: [["name": "okta"]])
        #expect(noIssuer.exitCode == 1 && noIssuer.stderrText.contains("no oidcIssuers entry named microsoft"), "\(noIssuer.stderrText)")
        let unconfigured = try replay(idToken: "{{idToken okta sub=s1}}", expect: ["status": 200])
        #expect(unconfigured.exitCode == 1 && unconfigured.stderrText.contains("AUTH_OIDC_PROVIDERS has no provider named okta"),
                "\(unconfigured.stderrText)")
        let unknownField = try replay(idToken: "x", expect: ["status": 200], oidcIssuers: [["name": "microsoft", "jwks": "/keys"]])
        #expect(unknownField.exitCode == 1 && unknownField.stderrText.contains("oidcIssuers microsoft: unknown field jwks"), "\(unknownField.stderrText)")
    }
}
