@testable import LambdaAuth
import LambdaAuthTestSupport
import Logging
@testable import LambdaAuthVerifier
import Testing

/// A machine without libcurl is misconfigured on every path that needs HTTP, not only on the AWS
/// ones: key fetches and Apple's endpoints answer CONFIG_ERROR too (never a retryable error a
/// client would retry for ever), naming the library.
@Suite struct MissingLibcurlTests {
    struct NoLibrary: HTTPClient {
        func send(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPResponse {
            throw .libraryUnavailable("libcurl.so.4 cannot be loaded (install libcurl)")
        }
    }

    @Test func keyFetchesAreAConfigurationError() throws {
        let cache = ProviderKeyCache(provider: KeySetName("google"), source: HTTPJWKSSource(url: "https://keys.example.com/jwks", client: NoLibrary()),
                                     cacheDirectory: nil, clock: FixedClock(1_800_000_000), logger: Logger(label: "test"))
        let error = try #require(throws: AuthError.self) { try cache.key(id: "k1") }
        #expect(error.code == .configError && !error.retryable && error.message.contains("libcurl"), "\(error)")
    }

    @Test func applesEndpointsAreAConfigurationError() throws {
        let apple = try AppleServerFixture()
        let settings = try #require(try AuthConfiguration.fromEnvironment(apple.environment).appleServer)
        let client = AppleTokenClient(settings: settings, secrets: AppleClientSecrets(settings: settings, clock: FixedClock(1_800_000_000)),
                                      http: NoLibrary())
        let revocation = try #require(throws: AuthError.self) { try client.revoke(refreshToken: "r", clientID: "c") }
        let exchange = try #require(throws: AuthError.self) { try client.exchange(code: "code", clientID: "c") }
        for error in [revocation, exchange] {
            #expect(error.code == .configError && !error.retryable && error.message.contains("libcurl"), "\(error)")
        }
    }
}
