/// Session activity is kept to the millisecond, so the session limit evicts exactly the least
/// recently active session and `sessions` lists exactly most recent first: to the second, the
/// sessions opened within one second tied and the order among them was arbitrary.
enum SessionActivity {
    /// Items written before kept epoch seconds. Below 10^11 a value is one of those: as
    /// milliseconds it would be before March 1973, as seconds it is before the year 5138.
    static func milliseconds(stored: Int64) -> Int64 {
        stored < 100_000_000_000 ? stored * 1000 : stored
    }

    /// A new session's activity: now, and strictly after every activity already recorded, so the
    /// order of sign-ins holds even when the clock does not move between them (AUTH_NOW, or
    /// several sign-ins within a millisecond).
    static func next(after recorded: some Sequence<Int64>, clock: any WallClock) -> Int64 {
        max(clock.nowMilliseconds, (recorded.max() ?? 0) + 1)
    }
}

extension WallClock {
    var nowMilliseconds: Int64 { Int64((now() * 1000).rounded(.down)) }
}
