import LambdaAuth
import LambdaAuthTooling

/// Sign-ins of several kinds in one world, measured as a Lambda runs them: each kind whole process
/// (stdin mode), then warm through the Runtime API (one resident process), the kinds alternating in
/// blocks so that all see the same machine. A kind gives, untimed, its next `count` events in the
/// order they are to be presented (a passkey's each need a challenge of their own and the next
/// sign count). The rows: each kind's whole-process median, then each kind's warm median / p99.
enum AlternatingSignIns {
    struct Kind {
        let label: String
        let events: (_ count: Int) -> [JSONValue]
    }

    static let warmUp = 20, warmRuns = 201, blocks = 2

    /// False, with a row saying why, when a run failed (no figures are added then).
    @discardableResult
    static func measure(_ kinds: [Kind], in world: FlowBench.World, section: String, _ table: inout BenchTable) -> Bool {
        var whole: [String: [Double]] = [:], warm: [String: [Double]] = [:]
        for _ in 0..<blocks {
            for kind in kinds {
                let once = kind.events(FloorBench.runs)
                switch EveryHandlerBench.wholeProcess(ProcessRunner.executable("signin"), environment: world.environment, event: { once[$0] }) {
                case .success(let samples): whole[kind.label, default: []] += samples
                case .failure(let reason):
                    table.add(section, "signin whole process, \(kind.label)", reason.description)
                    return false
                }
                let resident = kind.events(warmUp + warmRuns)
                switch ResidentHandler.measure(ProcessRunner.executable("signin"), environment: world.environment,
                                               warmUp: warmUp, count: warmRuns, event: { resident[$0] }) {
                case .success(let samples): warm[kind.label, default: []] += samples
                case .failure(let reason):
                    table.add(section, "warm signin, \(kind.label)", reason.description)
                    return false
                }
            }
        }
        for kind in kinds {
            let samples = whole[kind.label] ?? []
            table.add(section, "signin whole process (stdin mode), \(kind.label), median of \(samples.count)", format(percentile(samples, 0.5)) + " ms")
        }
        for kind in kinds {
            let samples = warm[kind.label] ?? []
            table.add(section, "warm signin through the Runtime API, \(kind.label), median / p99 of \(samples.count)",
                      format(percentile(samples, 0.5), decimals: 3) + " / " + format(percentile(samples, 0.99), decimals: 3) + " ms")
        }
        return true
    }
}
