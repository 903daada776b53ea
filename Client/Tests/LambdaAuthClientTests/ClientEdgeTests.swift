import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import LambdaAuthClient

/// The edges an app package built against the library ran into: the shortest access-token
/// lifetime, several observers of `states`, two clients writing one file, an access token the
/// server refuses, a second sign-in.
@Suite(.serialized) struct ClientEdgeTests {
    typealias Clock = ServeLifeCycleTests.Clock

    /// With the shortest lifetime the server allows, a fixed 60 s reserve called every token too
    /// old: each call refreshed, right after sign-in too, and nothing worked offline.
    @Test func aSixtySecondTokenServesWithoutARefresh() async throws {
        let server = try LocalServer(environment: ["AUTH_ACCESS_TOKEN_TTL": "60"])
        let clock = Clock()
        let auth = ServeLifeCycleTests.client(server, clock: clock)
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "short-lived"))
        let signedIn = try #require(await auth.storedSession?.accessToken)
        server.stop()
        #expect(try await auth.validAccessToken() == signedIn, "the sign-in's token, offline")
        try server.start()
        // 35 s on, not more: the server's restart and the requests take real seconds too.
        clock.advance(35)
        #expect(try await auth.validAccessToken() == signedIn, "25 s of 60 left: more than a quarter")
        #expect(server.events("refresh") == 0)
        clock.advance(15)
        #expect(try await auth.validAccessToken() != signedIn, "10 s left: within the reserve")
        #expect(server.events("refresh") == 1)
    }

    /// Two screens watching one client: each sees every state, `signedOut` included, and one that
    /// starts watching later sees where things stand first.
    @Test func everyObserverSeesEveryState() async throws {
        let session = SessionStorageTests.session()
        // Nothing listens on port 1: signing out is local whatever the server answers.
        let auth = AuthClient(baseURL: URL(string: "http://127.0.0.1:1")!, storage: InMemorySessionStorage(session),
                              retryPolicy: RetryPolicy(attempts: 1))
        let screen = Observer(auth.states), badge = Observer(auth.states)
        #expect(await screen.states(count: 1) == [.signedIn(session.user)])
        await #expect(throws: AuthClientError.self) { try await auth.signOut() }
        #expect(await screen.states(count: 2) == [.signedIn(session.user), .signedOut])
        #expect(await badge.states(count: 2) == [.signedIn(session.user), .signedOut])
        #expect(await Observer(auth.states).states(count: 1) == [.signedOut])

        // A loop that stops, or a stream never read, is forgotten: no state piles up for it.
        let reading = auth.observerCount
        _ = auth.states
        #expect(auth.observerCount == reading)
        let loop = Task { for await _ in auth.states {} }
        #expect(await Self.eventually { auth.observerCount == reading + 1 })
        loop.cancel()
        #expect(await Self.eventually { auth.observerCount == reading })
    }

    /// Whether `condition` holds within 5 s.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while !condition() {
            guard Date() < deadline else { return false }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return true
    }

    /// An app and its widget in one process, each with a FileSessionStorage of the same file:
    /// their saves must not write one temporary file together.
    @Test func concurrentSavesToOneFileNeverCollide() throws {
        let directory = SessionStorageTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storages = [FileSessionStorage(path: directory + "/session.json"), FileSessionStorage(path: directory + "/session.json")]
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { writer in
            for round in 0..<50 {
                do {
                    try storages[writer % 2].save(SessionStorageTests.session("rt-\(writer)-\(round)"))
                } catch {
                    _ = failures.enter()
                }
            }
        }
        #expect(failures.entries == 0)
        #expect(try storages[0].load()?.refreshToken.hasPrefix("rt-") == true, "a whole session, not two mixed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp") }.isEmpty)
    }

    /// Every write of the client (sign-in, link, unlink, refresh, sign-out, deletion) waits for
    /// its turn, as a refresh does: between two clients of one file, a write out of turn can undo
    /// the other's rotation.
    @Test func theClientWritesOnlyInItsTurn() async throws {
        let server = try LocalServer()
        let storage = TurnCheckingStorage()
        let auth = ServeLifeCycleTests.client(server, storage: storage)
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "in-turn"))
        try await auth.link(provider: "apple", idToken: try await server.idToken("apple", subject: "000123.in.turn"))
        try await auth.unlink(provider: "apple")
        try await auth.refresh()
        try await auth.signOut()
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "in-turn"))
        try await auth.deleteAccount()
        #expect(storage.saves >= 7 && storage.savesOutOfTurn == 0, "\(storage.savesOutOfTurn) of \(storage.saves) saves out of turn")
    }

    /// An app and its widget on one file, the widget refreshing behind the app's back (no grace
    /// period at the server): the app's link and sign-out use the token stored now, not the
    /// replaced one it loaded, which the server would take for a stolen one.
    @Test func aWriteKeepsTheTokenAnotherClientRotated() async throws {
        let server = try LocalServer(environment: ["AUTH_REFRESH_GRACE": "0"])
        let directory = SessionStorageTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = ServeLifeCycleTests.client(server, storage: FileSessionStorage(path: directory + "/session.json"))
        try await app.signIn(provider: "google", idToken: try await server.idToken("google", subject: "two-writers"))
        let widget = ServeLifeCycleTests.client(server, storage: FileSessionStorage(path: directory + "/session.json"))
        try await widget.refresh()
        try await app.link(provider: "apple", idToken: try await server.idToken("apple", subject: "000123.two.writers"))
        try await app.refresh()
        try await widget.refresh()
        try await widget.refresh()
        #expect(try await app.signOut() == 1)
        #expect(server.events("refresh_reuse_detected") == 0, "\(server.log(tail: 1500))")
    }

    /// An access token the server refuses though the client holds it valid (the server's key
    /// rotated, a clock far off): one refresh, then the call again, and the app sees its answer.
    @Test func aRefusedAccessTokenIsRefreshedAndTheCallMadeAgain() async throws {
        let server = try LocalServer()
        let auth = ServeLifeCycleTests.client(server)
        try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "refused"))
        var session = try #require(await auth.storedSession)
        let signed = try #require(session.accessToken.lastIndex(of: "."))
        session.accessToken = session.accessToken[..<signed] + ".AAAA"
        let refused = ServeLifeCycleTests.client(server, storage: InMemorySessionStorage(session))
        #expect(try await refused.sessions().map(\.id) == [session.sessionID])
        #expect(server.events("refresh") == 1)
        #expect(await refused.storedSession?.accessToken != session.accessToken)

        // A session that is over: the refresh says so, and the call is not made again.
        let other = ServeLifeCycleTests.client(server)
        try await other.signIn(provider: "google", idToken: try await server.idToken("google", subject: "refused"))
        try await refused.revokeSession(id: try #require(await other.storedSession?.sessionID))
        let ended = await #expect(throws: AuthClientError.self) { try await other.sessions() }
        #expect(ended?.code == "REFRESH_TOKEN_REVOKED")
        #expect(await !other.isSignedIn)
    }

    /// Signing in while signed in ends the replaced session at the server (it would otherwise
    /// stay alive, its refresh token usable, until it expired or was evicted).
    @Test func signingInAgainEndsTheSessionItReplaces() async throws {
        let server = try LocalServer()
        let auth = ServeLifeCycleTests.client(server)
        let watcher = Observer(auth.states)
        let first = try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "switcher"))
        let replaced = try #require(await auth.storedSession)
        let second = try await auth.signIn(provider: "google", idToken: try await server.idToken("google", subject: "switcher"))
        let current = try #require(await auth.storedSession)
        #expect(try await auth.sessions().map(\.id) == [current.sessionID])
        let reused = await #expect(throws: AuthClientError.self) {
            _ = try await server.request("POST", "/auth/refresh", body: ["refreshToken": .string(replaced.refreshToken)])
        }
        #expect(reused?.code == "REFRESH_TOKEN_REVOKED")
        #expect(await watcher.states(count: 3) == [.signedOut, .signedIn(first), .signedIn(second)], "no signedOut between the two")

        // A sign-in that fails replaces nothing: the session goes on.
        await #expect(throws: AuthClientError.self) { try await auth.signIn(provider: "google", idToken: "not.a.token") }
        #expect(await auth.storedSession == current)
        #expect(try await auth.sessions().map(\.id) == [current.sessionID])
    }
}

/// Everything one observer of `states` saw.
final class Observer: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [AuthState] = []

    init(_ stream: AsyncStream<AuthState>) {
        Task { for await state in stream { self.record(state) } }
    }

    private func record(_ state: AuthState) { lock.withLock { seen.append(state) } }

    /// What it saw once it saw `count` states, or after 5 s (a stream that splits its values
    /// would otherwise leave the test waiting for ever).
    func states(count: Int) async -> [AuthState] {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, lock.withLock({ seen.count }) < count {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return lock.withLock { seen }
    }
}

/// In memory, one holder at a time as a file's lock allows, and counting the saves made while no
/// one holds it.
final class TurnCheckingStorage: SessionStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: StoredSession?
    private var held = false
    private var counts = (saves: 0, outOfTurn: 0)

    var saves: Int { lock.withLock { counts.saves } }
    var savesOutOfTurn: Int { lock.withLock { counts.outOfTurn } }

    func load() throws -> StoredSession? { lock.withLock { stored } }

    func save(_ session: StoredSession?) throws {
        lock.withLock {
            counts.saves += 1
            if !held { counts.outOfTurn += 1 }
            stored = session
        }
    }

    func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        while !lock.withLock({ held ? false : { held = true; return true }() }) {
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        defer { lock.withLock { held = false } }
        return try await body()
    }
}
