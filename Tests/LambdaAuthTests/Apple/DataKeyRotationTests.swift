import Crypto
@testable import LambdaAuth
import LambdaAuthTestSupport
import LambdaAuthTooling
import Testing

/// AUTH_DATA_KEYS (contract section 13): the first key seals, every listed key opens, `authctl keys
/// reseal` moves every stored value under the first key, and a value no listed key opens is a
/// CONFIG_ERROR naming AUTH_DATA_KEYS that leaves the store as it was. Both backends.
@Suite(.serialized) struct DataKeyRotationTests {
    @Test func theVariablesParse() throws {
        let first = SystemRandomSource().bytes(32), second = SystemRandomSource().bytes(32)
        let both = try #require(try DataKeys.fromEnvironment(["AUTH_DATA_KEYS": "\(Base64.encoded(first)), \(Base64.encoded(second))"]))
        let sealed = try both.seal("secret", context: Array("ctx".utf8))
        #expect(both.opened(sealed, context: Array("ctx".utf8))?.isUnderFirstKey == true)
        #expect(DataKeys([first]).open(sealed, context: Array("ctx".utf8)) == "secret")
        #expect(DataKeys([second]).open(sealed, context: Array("ctx".utf8)) == nil, "the first key seals")
        #expect(both.open(sealed, context: Array("other".utf8)) == nil)
        let older = try DataKeys([second]).seal("old")
        #expect(both.opened(older).map { [$0.plaintext: $0.isUnderFirstKey] } == ["old": false], "every key opens")
        #expect(try DataKeys.fromEnvironment([:]) == nil)
        let withoutApple = try AuthConfiguration.fromEnvironment(["AUTH_DATA_KEYS": Base64.encoded(first)])
        #expect(withoutApple.appleServer == nil && withoutApple.dataKeys?.open(sealed, context: Array("ctx".utf8)) == "secret",
                "the keys are there for whatever else seals at rest, with Apple's back channel off")
        #expect(try DataKeys.fromEnvironment(["AUTH_DATA_KEY": Base64.encoded(first)])?.open(sealed, context: Array("ctx".utf8)) == "secret")

        for (environment, named) in [
            (["AUTH_DATA_KEY": Base64.encoded(first), "AUTH_DATA_KEYS": Base64.encoded(second)], "AUTH_DATA_KEYS"),
            (["AUTH_DATA_KEYS": "\(Base64.encoded(first)),c2hvcnQ="], "AUTH_DATA_KEYS"),
            (["AUTH_DATA_KEYS": " , "], "AUTH_DATA_KEYS"),
            (["AUTH_DATA_KEY": "not base64!"], "AUTH_DATA_KEY"),
        ] {
            let error = try #require(throws: AuthError.self) { try AuthConfiguration.fromEnvironment(environment) }
            #expect(error.code == .configError && error.message.contains(named), "\(error.message)")
            #expect(!error.message.contains(Base64.encoded(first)) && !error.message.contains(Base64.encoded(second)))
        }
        #expect(SecretVariables.names.contains("AUTH_DATA_KEYS"))
    }

    @Test(arguments: FlowWorld.Backend.allCases)
    func rotatingTheKeyKeepsEveryAppleUserDeletable(backend: FlowWorld.Backend) throws {
        let apple = try AppleServerFixture()
        let world = try FlowWorld(apple.environment, backend: backend)
        let oldKey = Base64.encoded(apple.dataKey)
        let newKeyBytes = SystemRandomSource().bytes(32)
        let newKey = Base64.encoded(newKeyBytes)
        let rotated = ["AUTH_DATA_KEY": "", "AUTH_DATA_KEYS": "\(newKey),\(oldKey)"]
        let newOnly = ["AUTH_DATA_KEY": "", "AUTH_DATA_KEYS": newKey]

        func signIn(_ subject: String, environment: [String: String] = [:]) throws -> (userID: String, accessToken: JSONValue) {
            let code = apple.server.mintCode(subject: subject, clientID: TestIssuer.appleAudience)
            let output = world.run("signin", ["provider": "apple", "idToken": .string(world.appleToken(subject: subject)),
                                              "authorizationCode": .string(code)], environment: environment)
            let body = try #require(output.responseBody)
            return (try #require(body["user"]?["id"]?.stringValue, "\(output.stdoutText)"), try #require(body["tokens"]?["accessToken"]))
        }
        func sealedToken(_ userID: String) throws -> String? {
            try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "TOKEN#apple"))?["sealedToken"]?.stringValue
        }
        func reseal(_ environment: [String: String]) throws -> ProcessRunner.Output {
            try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["keys", "reseal"],
                                  environment: world.environment.merging(environment) { $1 })
        }
        func deleteAccount(_ accessToken: JSONValue, _ environment: [String: String]) -> ProcessRunner.Output {
            world.run("delete-account", ["accessToken": accessToken], environment: environment)
        }

        let before = try (1...3).map { try signIn("000100.rotation.\($0)") }

        // The old key dropped too early: refused, named, and nothing changes.
        let stored = try world.allItems(at: 0)
        let files = world.storeSnapshot()
        let refused = deleteAccount(before[0].accessToken, newOnly)
        #expect(refused.errorCode == "CONFIG_ERROR" && refused.responseBody?["error"]?["message"]?.stringValue?.contains("AUTH_DATA_KEYS") == true,
                "\(refused.stdoutText)")
        let refusedReseal = try reseal(newOnly)
        #expect(refusedReseal.exitCode != 0 && refusedReseal.stderrText.contains("AUTH_DATA_KEYS"), "\(refusedReseal.stderrText)")
        #expect(try world.allItems(at: 0) == stored, "the store is unchanged")
        #expect(world.storeSnapshot() == files, "the local store's files are byte-identical (empty on DynamoDB)")
        #expect(apple.server.revocations.isEmpty)

        // Rotated: an old user is deleted before any re-sealing, a new one is sealed under the new key.
        #expect(deleteAccount(before[0].accessToken, rotated).responseBody?["deleted"] == true)
        let newcomer = try signIn("000100.rotation.new", environment: rotated)
        #expect(DataKeys([newKeyBytes]).opened(try #require(try sealedToken(newcomer.userID)),
                                               context: ProviderTokenSealing.associatedData(userID: newcomer.userID, provider: .apple,
                                                                                            subject: "000100.rotation.new")) != nil)
        let resealed = try reseal(rotated)
        #expect(resealed.exitCode == 0 && resealed.stdoutText.contains("re-sealed 2, already under the first key 1"),
                "\(resealed.stdoutText)\(resealed.stderrText)")
        #expect(try reseal(rotated).stdoutText.contains("re-sealed 0, already under the first key 3"), "a second run has nothing to do")

        // The old key gone: every remaining Apple user is deleted, and each token was revoked at Apple.
        for user in before.dropFirst() + [newcomer] {
            let deleted = deleteAccount(user.accessToken, newOnly)
            #expect(deleted.responseBody == ["deleted": true, "userId": .string(user.userID)], "\(deleted.stdoutText)")
            #expect(try sealedToken(user.userID) == nil)
        }
        #expect(Set(apple.server.revocations.map(\.token)) == Set(apple.server.issuedRefreshTokens) && apple.server.revocations.count == 4)
        #expect(try world.allItems(at: 0).allSatisfy { !($0["PK"]?.stringValue ?? "").hasPrefix("USER#") }, "every user is gone")
        let logs = world.logs.joined(separator: "\n")
        #expect(!logs.contains(oldKey) && !logs.contains(newKey))
    }

    /// Once reseal reports success the retired key can go: no file of the local store (its log,
    /// its partition files) still holds a value that key sealed, whether the value was still in
    /// the log or already checkpointed into a partition file.
    @Test func afterResealNoStoreFileHoldsAValueSealedUnderTheRetiredKey() throws {
        let apple = try AppleServerFixture()
        let world = try FlowWorld(apple.environment, backend: .local)
        var sealed: [String] = []
        for (index, subject) in ["000100.retired.1", "000100.retired.2"].enumerated() {
            let code = apple.server.mintCode(subject: subject, clientID: TestIssuer.appleAudience)
            let output = world.run("signin", ["provider": "apple", "idToken": .string(world.appleToken(subject: subject)),
                                              "authorizationCode": .string(code)])
            let userID = try #require(output.responseBody?["user"]?["id"]?.stringValue, "\(output.stdoutText)")
            sealed.append(try #require(try world.table().getItem(TableKey(pk: "USER#\(userID)", sk: "TOKEN#apple"))?["sealedToken"]?.stringValue))
            // The first value checkpointed into its partition file, the second left in the log.
            if index == 0 { try LocalTable(directory: world.storeDirectory, clock: FixedClock(Double(world.now))).eraseDeletedItems() }
        }
        // base64's '/' may be escaped in JSON: the longest run of letters and digits stands for the value.
        let needles = sealed.map { (value: String) -> String in
            let runs: [Substring] = value.split(whereSeparator: { (character: Character) -> Bool in
                !(character.isASCII && (character.isLetter || character.isNumber))
            })
            return runs.max { $0.count < $1.count }.map(String.init) ?? value
        }
        #expect(!OnDiskErasureTests.traces(of: needles, under: world.storeDirectory).isEmpty, "the probe finds the sealed values before")

        let rotated = world.environment.merging(["AUTH_DATA_KEY": "", "AUTH_DATA_KEYS": "\(Base64.encoded(SystemRandomSource().bytes(32))),\(Base64.encoded(apple.dataKey))"]) { $1 }
        let resealed = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["keys", "reseal"], environment: rotated)
        #expect(resealed.exitCode == 0 && resealed.stdoutText.contains("re-sealed 2,"), "\(resealed.stdoutText)\(resealed.stderrText)")
        let left = OnDiskErasureTests.traces(of: needles, under: world.storeDirectory)
        #expect(left.isEmpty, "\(left)")
    }

    /// The keys may come from AWS (AUTH_SECRETS), for authctl as for the handlers.
    @Test func resealReadsTheKeysFromASecret() throws {
        let apple = try AppleServerFixture()
        let world = try FlowWorld(apple.environment, backend: .dynamoDB)
        let code = apple.server.mintCode(subject: "000100.secret.1", clientID: TestIssuer.appleAudience)
        let signedIn = world.run("signin", ["provider": "apple", "idToken": .string(world.appleToken(subject: "000100.secret.1")),
                                            "authorizationCode": .string(code)])
        let accessToken = try #require(signedIn.responseBody?["tokens"]?["accessToken"], "\(signedIn.stdoutText)")
        let newKey = Base64.encoded(SystemRandomSource().bytes(32))
        let secret = try SecretsStartupTests.store(JSONValue.object(["AUTH_DATA_KEYS": .string("\(newKey),\(Base64.encoded(apple.dataKey))")]).serialized(),
                                                   in: .secretsManager)
        var environment = world.environment.merging(SecretsStartupTests.environment(secrets: secret, endpoint: try MotoServer.shared().endpoint)) { $1 }
        environment["AUTH_DATA_KEY"] = ""
        let resealed = try ProcessRunner.run(ProcessRunner.executable("authctl"), arguments: ["keys", "reseal"], environment: environment)
        #expect(resealed.exitCode == 0 && resealed.stdoutText.contains("re-sealed 1,"), "\(resealed.stdoutText)\(resealed.stderrText)")
        #expect(!resealed.stderrText.contains(newKey))
        let deleted = world.run("delete-account", ["accessToken": accessToken], environment: ["AUTH_DATA_KEY": "", "AUTH_DATA_KEYS": newKey])
        #expect(deleted.responseBody?["deleted"] == true, "the new key alone opens it: \(deleted.stdoutText)")
    }
}
