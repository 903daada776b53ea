import Foundation

/// Hands every observer of `AuthClient.states` every state. One `AsyncStream` read by two loops
/// splits its values between them, so one screen could miss the `signedOut` the other took: here
/// each observer has a stream of its own.
final class StateBroadcaster: @unchecked Sendable {
    private let lock = NSLock()
    /// `signedIn(user)` or `signedOut`: what a new observer is told first.
    private var standing: AuthState
    private var observers: [UUID: AsyncStream<AuthState>.Continuation] = [:]
    private var finished = false

    init(_ standing: AuthState) { self.standing = standing }

    /// A new stream: the standing state, then every state published after it, until the client
    /// is gone or the observer stops reading.
    func subscribe() -> AsyncStream<AuthState> {
        // Unbounded: a slow observer must still get `signedOut`, and states are few and small.
        let (stream, continuation) = AsyncStream.makeStream(of: AuthState.self)
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        let open = lock.withLock {
            // Under the lock, as `publish` yields: no state falls between the standing one and
            // the first published after it.
            continuation.yield(standing)
            if !finished { observers[id] = continuation }
            return !finished
        }
        if !open { continuation.finish() }
        return stream
    }

    func publish(_ state: AuthState) {
        lock.withLock {
            switch state {
            case .signedIn(let user), .userUpdated(let user): standing = .signedIn(user)
            case .signedOut: standing = .signedOut
            case .tokenRefreshed: break
            }
            for observer in observers.values { observer.yield(state) }
        }
    }

    /// Ends every stream (the client is gone).
    func finish() {
        // Outside the lock: finishing runs `onTermination`, which takes it.
        let ended = lock.withLock {
            finished = true
            defer { observers = [:] }
            return Array(observers.values)
        }
        for observer in ended { observer.finish() }
    }

    /// How many streams are being read (tests: a stream dropped is forgotten).
    var observerCount: Int { lock.withLock { observers.count } }

    private func remove(_ id: UUID) {
        _ = lock.withLock { observers.removeValue(forKey: id) }
    }
}
