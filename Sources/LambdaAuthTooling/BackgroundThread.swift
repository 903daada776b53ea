#if canImport(Glibc)
import Glibc
#endif

/// Detached pthreads for the few background jobs of the tools and tests (serving a loopback test
/// server, collecting a resident process's output): they must not depend on Swift concurrency's pool.
public enum BackgroundThread {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    public static func detach(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        precondition(result == 0, "pthread_create failed")
        pthread_detach(thread)
    }
}
