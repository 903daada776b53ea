/// A transaction whose actions that can fail are named, so a flow asks "did the session check
/// fail?" rather than "did action 3 fail?" (indexes shift whenever an action is added before).
///
/// The few named steps are kept in a list, not a dictionary: a dictionary keyed by each flow's
/// step type made the Swift runtime look up that type's `Hashable` conformance by scanning every
/// conformance record of the binary (about 0.06 ms) in each process that ran the flow.
struct TransactionPlan<Step: Equatable> {
    private(set) var actions: [TransactWriteAction] = []
    private var positions: [(step: Step, position: Int)] = []

    mutating func add(_ step: Step, _ action: TransactWriteAction) {
        positions.append((step, actions.count))
        actions.append(action)
    }

    /// Actions whose failure the flow does not need to tell apart.
    mutating func add(_ unnamed: [TransactWriteAction]) {
        actions += unnamed
    }

    /// Why a run of this plan was cancelled.
    struct Cancellation {
        let reasons: [CancellationReason]
        fileprivate let positions: [(step: Step, position: Int)]

        /// The step's condition failed (false for a step the plan does not have).
        func failed(_ step: Step) -> Bool {
            guard let named = positions.last(where: { $0.step == step }) else { return false }
            return reasons.failed(named.position)
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
