import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import LambdaAuthClient

/// The client against `authctl serve` on the local store (issue 29), each test with a server of
/// its own. The client's clock moves instead of the server's: the client alone decides when its
/// access token is too old, and the server's answers follow its real clock.
@Suite(.serialized) struct ServeLifeCycleTests {
    /// A clock the test moves.
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var offset: TimeInterval = 0
        func advance(_ seconds: TimeInterval) { lock.withLock { offset += seconds } }
        var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
    }

    static func client(_ server: LocalServer, storage: any SessionStorage = InMemorySessionStorage(), clock: Clock = Clock(),
                       retry: RetryPolicy = RetryPolicy(attempts: 2, baseDelay: 0.05, maximumDelay: 0.1)) -> AuthClient {
        AuthClient(baseURL: server.baseURL, storage: storage, retryPolicy: retry, now: { clock.now })
    }

    @Test func theWholeLifeCycle() async throws {
        let server = try LocalServer()
        let clock = Clock()
        let auth = Self.client(server, clock: clock)
        var states = auth.states.makeAsyncIterator()
        #expect(await states.next() == .signedOut)

        let user = try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "client-1", email: "client@example.com"),
                                         device: Device(name: "test phone", platform: "ios"))
        #expect(user.identities.map(\.provider) == ["google"])
        #expect(await states.next() == .signedIn(user))
        let first = try await auth.validAccessToken()
        #expect(try await auth.validAccessToken() == first, "a valid token is handed out again, with no request")
        // The app's own API behind the authorizer (the template's example route, which serve answers too).
        var request = URLRequest(url: server.baseURL.appendingPathComponent("example/whoami"))
        try await auth.authorize(&request)
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer \(first)")
        let (data, response) = try await URLSession(configuration: .ephemeral).data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(try JSONDecoder().decode(JSON.self, from: data)["userId"] == .string(user.id))
        #expect(try await auth.sessions().map(\.current) == [true])
        let credentials = try await auth.credentials()
        #expect(credentials.accessKeyId.hasPrefix("ASIA") && server.events("refresh") == 0)

        // Past the access token's life (900 s): the next call refreshes.
        clock.advance(901)
        let second = try await auth.validAccessToken()
        #expect(second != first && server.events("refresh") == 1)
        #expect(await states.next() == .tokenRefreshed)

        let linked = try await auth.link(provider: "apple", idToken: try await server.idToken("apple", subject: "000123.client.1"))
        #expect(linked.identities.map(\.provider).sorted() == ["apple", "google"])
        #expect(await states.next() == .userUpdated(linked))
        let unlinked = try await auth.unlink(provider: "apple")
        #expect(unlinked.identities.map(\.provider) == ["google"])
        _ = await states.next()

        #expect(try await auth.signOut() == 1)
        #expect(await states.next() == .signedOut)
        await #expect(throws: AuthClientError.self) { try await auth.validAccessToken() }

        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "client-1"))
        _ = await states.next()
        try await auth.deleteAccount()
        #expect(await states.next() == .signedOut)
        #expect(server.events("account_deleted") == 1)
    }

    @Test func aHundredCallersShareOneRefresh() async throws {
        let server = try LocalServer()
        let clock = Clock()
        let auth = Self.client(server, clock: clock)
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "client-crowd"))
        clock.advance(901)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await auth.validAccessToken() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1, "every caller got the same new token")
        #expect(server.events("refresh") == 1, "one refresh request: \(server.events("refresh"))")
    }

    /// An app and its extension: two clients, one file. With no grace period at the server, a
    /// used token presented by either would be reuse and sign both out at once.
    @Test func twoClientsSharingOneFileNeverPresentAUsedToken() async throws {
        let server = try LocalServer(environment: ["AUTH_REFRESH_GRACE": "0"])
        let directory = NSTemporaryDirectory() + "client-shared-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = Self.client(server, storage: FileSessionStorage(path: directory + "/session.json"))
        try await app.signIn(provider: "google", idToken: try await server.idToken("google", subject: "client-shared"))
        let widget = Self.client(server, storage: FileSessionStorage(path: directory + "/session.json"))
        #expect(await widget.isSignedIn, "the second client starts from the stored session")
        for _ in 0..<10 {
            async let first = app.refresh()
            async let second = widget.refresh()
            _ = try await (first, second)
        }
        #expect(server.events("refresh_reuse_detected") == 0 && server.events("refresh_failed") == 0, "\(server.log(tail: 1500))")
        let appSignedIn = await app.isSignedIn, widgetSignedIn = await widget.isSignedIn
        let bothSignedIn = appSignedIn && widgetSignedIn
        #expect(bothSignedIn)
    }

    /// A crash between the server's answer and the storage's write: the replaced token is what
    /// the storage still holds, and within the grace period it answers the same live token again.
    @Test func aLostRotationIsRecoveredWithinTheGracePeriod() async throws {
        let server = try LocalServer()
        let storage = FailingOnceStorage()
        let auth = Self.client(server, storage: storage)
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "client-crash"))
        storage.failNextSave()
        await #expect(throws: AuthClientError.self) { try await auth.refresh() }
        #expect(await auth.isSignedIn)
        try await auth.refresh()
        #expect(server.events("refresh") == 2 && server.events("refresh_reuse_detected") == 0, "\(server.log(tail: 1500))")
        #expect(try storage.load()?.refreshToken != nil)
    }

    @Test func anotherClientReusingAReplacedTokenSignsThisOneOut() async throws {
        let server = try LocalServer(environment: ["AUTH_REFRESH_GRACE": "0"])
        let auth = Self.client(server)
        var states = auth.states.makeAsyncIterator()
        #expect(await states.next() == .signedOut)
        let user = try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "client-thief"))
        #expect(await states.next() == .signedIn(user))
        let stolen = try #require(await auth.storedRefreshToken)
        try await auth.refresh()
        #expect(await states.next() == .tokenRefreshed)
        // The thief presents the token the client already replaced: the family dies.
        await #expect(throws: AuthClientError.self) {
            _ = try await server.request("POST", "/auth/refresh", body: ["refreshToken": .string(stolen)])
        }
        await #expect(throws: AuthClientError.self) { try await auth.refresh() }
        #expect(await states.next() == .signedOut)
        #expect(await !auth.isSignedIn)
    }

    @Test func aServerDownIsNoSignOut() async throws {
        let server = try LocalServer()
        let auth = Self.client(server)
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "client-outage"))
        server.stop()
        do {
            try await auth.refresh()
            Issue.record("a refresh succeeded with the server down")
        } catch {
            #expect(error.retryable && error.code == "NETWORK_ERROR")
        }
        #expect(await auth.isSignedIn)
        try server.start()
        try await auth.refresh()
        #expect(await auth.isSignedIn)
    }
}

extension AuthClient {
    /// The refresh token the client holds now (tests only: a thief's copy).
    var storedRefreshToken: String? { storedSession?.refreshToken }
}

/// A storage whose next write fails, as a crash between the answer and the write would lose it.
final class FailingOnceStorage: SessionStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: StoredSession?
    private var failing = false

    func failNextSave() { lock.withLock { failing = true } }
    func load() throws -> StoredSession? { lock.withLock { stored } }
    func save(_ session: StoredSession?) throws {
        try lock.withLock {
            if failing {
                failing = false
                throw CocoaError(.fileWriteUnknown)
            }
            stored = session
        }
    }
}
