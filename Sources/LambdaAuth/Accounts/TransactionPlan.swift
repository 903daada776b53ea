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

    /// Several actions under one name (a proof's own writes, committed with a sign-in).
    mutating func add(_ step: Step, _ group: [TransactWriteAction]) {
        for action in group { add(step, action) }
    }

    /// Actions whose failure the flow does not need to tell apart.
    mutating func add(_ unnamed: [TransactWriteAction]) {
        actions += unnamed
    }

    /// Why a run of this plan was cancelled.
    struct Cancellation {
        let reasons: [CancellationReason]
        fileprivate let positions: [(step: Step, position: Int)]

        /// The condition of the step (of one of its actions) failed; false for a step the plan
        /// does not have.
        func failed(_ step: Step) -> Bool {
            positions.contains { $0.step == step && reasons.failed($0.position) }
        }

        /// The reasons of the step's actions, in their order.
        func reasons(of step: Step) -> [CancellationReason] {
            positions.filter { $0.step == step }.map { reasons.indices.contains($0.position) ? reasons[$0.position] : .none }
        }

        var codes: [String] { reasons.map(\.code) }

        /// A cancellation no step explains: a bug worth hearing about, not the caller's fault.
        func unexpected(_ write: String) -> AuthError {
            .internalError("\(write) cancelled: \(codes)")
        }
    }

    /// The plan's own reasons, in its order, as a cancellation: also for a plan whose actions ran
    /// inside a larger transaction (`Cancellation.reasons(of:)` of the step that held them).
    func cancellation(_ reasons: [CancellationReason]) -> Cancellation {
        Cancellation(reasons: reasons, positions: positions)
    }
}

/// A proof's plan travels with its proof until the sign-in's transaction runs it.
extension TransactionPlan: Sendable where Step: Sendable {}

extension Table {
    /// Runs the plan as one transaction: nil when it committed, else why it was cancelled.
    func run<Step>(_ plan: TransactionPlan<Step>) throws(AuthError) -> TransactionPlan<Step>.Cancellation? {
        try transact(plan.actions).map(plan.cancellation)
    }
}

private extension [CancellationReason] {
    func failed(_ index: Int) -> Bool {
        index < count && self[index].code == "ConditionalCheckFailed"
    }
}
