/// A transaction whose actions that can fail are named, so a flow asks "did the session check
/// fail?" rather than "did action 3 fail?" (indexes shift whenever an action is added before).
struct TransactionPlan<Step: Hashable> {
    private(set) var actions: [TransactWriteAction] = []
    private var positions: [Step: Int] = [:]

    mutating func add(_ step: Step, _ action: TransactWriteAction) {
        positions[step] = actions.count
        actions.append(action)
    }

    /// Actions whose failure the flow does not need to tell apart.
    mutating func add(_ unnamed: [TransactWriteAction]) {
        actions += unnamed
    }

    /// Why a run of this plan was cancelled.
    struct Cancellation {
        let reasons: [CancellationReason]
        fileprivate let positions: [Step: Int]

        /// The step's condition failed (false for a step the plan does not have).
        func failed(_ step: Step) -> Bool {
            guard let position = positions[step] else { return false }
            return reasons.failed(position)
        }

        var codes: [String] { reasons.map(\.code) }
    }

    fileprivate func cancellation(_ reasons: [CancellationReason]) -> Cancellation {
        Cancellation(reasons: reasons, positions: positions)
    }
}

extension Table {
    /// Runs the plan as one transaction: nil when it committed, else why it was cancelled.
    func run<Step>(_ plan: TransactionPlan<Step>) throws(AuthError) -> TransactionPlan<Step>.Cancellation? {
        try transact(plan.actions).map(plan.cancellation)
    }
}
