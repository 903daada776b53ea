import Foundation
import Testing
@testable import LambdaAuthClient
#if canImport(Glibc)
import Glibc
#endif

/// The storages' promises: the file is the owner's alone, replaced whole, and clients in
/// different tasks (as in different processes) take turns through its lock.
@Suite struct SessionStorageTests {
    static func session(_ refreshToken: String = "rt-1") -> StoredSession {
        StoredSession(user: User(id: "u-1", identities: []), sessionID: "s-1", accessToken: "at",
                      accessTokenExpiresAt: Date(timeIntervalSince1970: 1_900_000_000), refreshToken: refreshToken,
                      refreshTokenExpiresAt: Date(timeIntervalSince1970: 1_900_000_900), credentials: nil)
    }

    static func directory() -> String {
        let path = NSTemporaryDirectory() + "lambda-auth-client-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aFileStorageKeepsTheSessionForItsOwnerAlone() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = FileSessionStorage(path: directory + "/session.json")
        #expect(try storage.load() == nil)
        try storage.save(Self.session())
        #expect(try storage.load() == Self.session())
        var status = stat()
        #expect(stat(storage.path, &status) == 0 && status.st_mode & 0o777 == 0o600)
        try storage.save(Self.session("rt-2"))
        #expect(try FileSessionStorage(path: storage.path).load()?.refreshToken == "rt-2", "another instance reads what was stored")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp") }.isEmpty)
        try storage.save(nil)
        #expect(try storage.load() == nil)
    }

    @Test func turnsAreTakenOneAtATime() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = FileSessionStorage(path: directory + "/session.json")
        let inside = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await storage.exclusively {
                        let now = inside.enter()
                        #expect(now == 1, "two holders of the lock at once")
                        try await Task.sleep(nanoseconds: 2_000_000)
                        inside.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(inside.maximum == 1 && inside.entries == 8)
    }

    @Test func theServersErrorBodyBecomesTheTypedError() {
        let body: JSON = ["error": ["code": "RATE_LIMITED", "message": "slow down", "status": 429, "retryable": true, "retryAfter": 30]]
        let error = Transport.error(status: 429, answer: body)
        #expect(error == AuthClientError(code: "RATE_LIMITED", status: 429, retryable: true, message: "slow down", retryAfter: 30))
        #expect(Transport.error(status: 401, answer: ["message": "Unauthorized"]).code == "ACCESS_TOKEN_INVALID")
        #expect(Transport.error(status: 503, answer: .null).retryable)
        #expect(AuthClientError(code: "REFRESH_TOKEN_REUSED", status: 401, retryable: false, message: "").endsTheSession)
        #expect(!AuthClientError(code: "STORE_UNAVAILABLE", status: 503, retryable: true, message: "").endsTheSession)
        let denied = Transport.error(status: 403, answer: ["error": ["code": "HOOK_DENIED", "message": "only example.org signs up",
                                                                     "status": 403, "retryable": false]])
        #expect(denied.hookDenial == "only example.org signs up" && !denied.retryable)
        #expect(Transport.error(status: 503, answer: ["error": ["code": "HOOK_UNAVAILABLE", "message": "try again", "status": 503,
                                                                "retryable": true]]).hookDenial == nil)
    }

    @Test func backoffIsCappedAndJittered() {
        let policy = RetryPolicy(attempts: 5, baseDelay: 0.5, maximumDelay: 2)
        for retry in 0..<30 {
            let delay = policy.delay(beforeRetry: retry)
            #expect(delay >= 0 && delay <= min(2, 0.5 * pow(2, Double(retry))))
        }
    }
}

/// How many tasks are inside a critical section, and the most there ever were.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var current = 0
    private(set) var maximum = 0
    private(set) var entries = 0

    func enter() -> Int {
        lock.withLock {
            current += 1
            entries += 1
            maximum = max(maximum, current)
            return current
        }
    }

    func leave() { lock.withLock { current -= 1 } }
}
