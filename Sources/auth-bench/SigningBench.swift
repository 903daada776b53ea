import LambdaAuth
import LambdaAuthTooling

/// Issue 24: what RS256 (the only algorithm API Gateway's JWT authorizer verifies) costs beside
/// ES256. Warm sign-in and refresh through the Runtime API, and a whole sign-in process, with the
/// same world but for the signing key; the two algorithms alternate in blocks so that both see
/// the same machine.
enum SigningBench {
    static var section: BenchSection { BenchSection(name: "signing", run: run) }
    static let warmUp = 20, warmRuns = 201, blocks = 2

    static func run(_ table: inout BenchTable) {
        let algorithms: [JWSAlgorithm] = [.es256, .rs256]
        var warm: [String: [Double]] = [:], whole: [JWSAlgorithm: [Double]] = [:]
        for _ in 0..<blocks {
            for algorithm in algorithms {
                let world = FlowBench.makeWorld(["AUTH_SIGNING_KEYS": FlowBench.benchSigningKeys[algorithm]!])
                defer { FileSystem.removeTree(world.directory) }
                guard let requests = HandlerRequests(world, count: warmUp + warmRuns) else {
                    table.add("signing", "warm sign-in and refresh", "the accounts the requests need could not be made")
                    return
                }
                for handler in ["signin", "refresh"] {
                    switch ResidentHandler.measure(ProcessRunner.executable(handler), environment: world.environment,
                                                   warmUp: warmUp, count: warmRuns, event: requests.events[handler]!) {
                    case .success(let samples): warm["\(handler) \(algorithm.rawValue)", default: []] += samples
                    case .failure(let reason):
                        table.add("signing", "warm \(handler) (\(algorithm.rawValue))", reason.description)
                        return
                    }
                }
                switch EveryHandlerBench.wholeProcess(ProcessRunner.executable("signin"), environment: world.environment,
                                                      event: requests.events["signin"]!) {
                case .success(let samples): whole[algorithm, default: []] += samples
                case .failure(let reason):
                    table.add("signing", "signin whole process (\(algorithm.rawValue))", reason.description)
                    return
                }
            }
        }
        for handler in ["signin", "refresh"] {
            for algorithm in algorithms {
                let samples = warm["\(handler) \(algorithm.rawValue)"] ?? []
                table.add("signing", "warm \(handler), \(algorithm.rawValue) access tokens, median / p99 of \(samples.count)",
                          format(percentile(samples, 0.5), decimals: 3) + " / " + format(percentile(samples, 0.99), decimals: 3) + " ms")
            }
        }
        for algorithm in algorithms {
            let samples = whole[algorithm] ?? []
            table.add("signing", "signin whole process (stdin mode), \(algorithm.rawValue) access tokens, median of \(samples.count)",
                      format(percentile(samples, 0.5)) + " ms")
        }
    }
}
