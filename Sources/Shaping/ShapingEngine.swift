import Logging
import Netlink

/// Applies, switches and removes plans, all-or-nothing.
///
/// Every operation either completes or restores what was there before: a failed build removes
/// what it created, a failed switch changes the touched objects back. The engine only ever
/// deletes objects the survey shows to be linkcond's own, unless told to replace a foreign
/// qdisc.
public final class ShapingEngine {
    public let kernel: any TrafficControlKernel
    /// Where a target's failure rules go: the same namespace as `kernel`; `nil` where failures
    /// cannot be put in force.
    public let filter: (any PacketFilterKernel)?
    public var logger: Logger

    public init(kernel: any TrafficControlKernel, filter: (any PacketFilterKernel)? = nil, logger: Logger = Logger(label: "linkcond.shaping")) {
        self.kernel = kernel
        self.filter = filter
        self.logger = logger
    }

    public func survey(_ target: ShapingTarget) throws(ShapingError) -> KernelSurvey {
        do {
            return try kernel.survey(target)
        } catch {
            throw ShapingError.surveyFailed(target, error)
        }
    }

    /// Builds `plan` on an interface that has no linkcond tree yet.
    ///
    /// A foreign root or ingress qdisc is refused unless `replacingForeign`, in which case it
    /// is deleted first; it cannot be restored afterwards. Leftovers of an earlier linkcond
    /// tree are removed first.
    public func apply(_ plan: TrafficPlan, replacingForeign: Bool = false) throws(ShapingError) {
        let target = plan.target
        let survey = try survey(target)
        guard survey.interface != nil else {
            throw ShapingError.interfaceMissing(target.interface)
        }
        if case .foreign(let what) = survey.ifbOwnership {
            throw ShapingError(code: .ifbNameTaken, message: "cannot create linkcond's IFB: there is already a \(what); rename or delete it")
        }

        var clearing = survey.teardownSteps
        if !clearing.isEmpty {
            logger.notice("removing a linkcond tree left on \(target.interface) by an earlier run")
        }
        for (ownership, parent) in [(survey.root, TrafficControlHandle.root), (survey.ingress, .ingressParent)] {
            guard case .foreign(let what) = ownership else { continue }
            guard replacingForeign else {
                let tcParent = parent == .root ? "root" : "ingress"
                throw ShapingError(
                    code: .foreignQdisc,
                    message: "\(target.interface) already has a \(what) that linkcond did not create; delete it (tc qdisc del dev \(target.interface) \(tcParent)) or let linkcond replace it (activate --replace-foreign)"
                )
            }
            let handle = survey.qdiscs.first { $0.parent == parent }?.handle ?? .unspecified
            logger.warning("replacing the \(what) on \(target.interface), as asked; it will not come back when shaping stops")
            clearing.append(.deleteQdisc(device: target.interface, parent: parent, handle: handle))
        }
        try perform(clearing.map { PlannedStep(action: $0, undo: nil) })
        try perform(plan.buildSteps)
    }

    /// Switches from `current` to `next` by changing values in place: no moment without
    /// shaping, no packet dropped for the switch itself.
    public func change(from current: TrafficPlan, to next: TrafficPlan) throws(ShapingError) {
        guard let steps = current.changeSteps(to: next) else {
            preconditionFailure("plans for one target always share a skeleton")
        }
        try perform(steps)
    }

    /// Changes one matched condition's class and leaf in place (`TrafficPlan.slotChangeSteps`),
    /// rolling back on failure like `change(from:to:)`.
    public func changeSlot(_ slot: UInt16, from current: TrafficPlan, to next: TrafficPlan) throws(ShapingError) {
        try perform(current.slotChangeSteps(slot, to: next))
    }

    /// Writes `plan`'s values into a complete tree whose values are unknown, e.g. one a daemon
    /// that was killed left behind, possibly halfway through a switch.
    public func rewrite(_ plan: TrafficPlan) throws(ShapingError) {
        try perform(plan.rewriteSteps)
    }

    /// Removes every linkcond object from the target; objects already gone are fine.
    public func remove(_ target: ShapingTarget) throws(ShapingError) {
        let steps = try survey(target).teardownSteps
        var failures: [ShapingError] = []
        for step in steps {
            do {
                logger.debug("\(step)")
                try kernel.execute(step)
            } catch where Self.isAlreadyGone(error) {
                continue
            } catch {
                failures.append(ShapingError(step: step, refusal: error))
            }
        }
        if var first = failures.first {
            first.rollbackFailures = failures.dropFirst().map(\.message)
            throw first
        }
    }

    /// Runs `steps` in order; on the first refusal, runs the undo of every completed step in
    /// reverse and throws the refusal, with any undo that failed in turn. A refused change in
    /// place is undone too: the kernel may have taken part of it (netem's change sets the limit,
    /// delay, jitter, loss and reordering before it checks duplication, and keeps them when it
    /// refuses), and writing the old values back is right either way.
    func perform(_ steps: [PlannedStep]) throws(ShapingError) {
        for (index, step) in steps.enumerated() {
            do {
                logger.debug("\(step.action)")
                try kernel.execute(step.action)
            } catch {
                var failure = ShapingError(step: step.action, refusal: error)
                logger.warning("\(failure.message); rolling back \(index) completed step(s)")
                failure.rollbackFailures = rollBack(steps[..<index] + (step.action.isChangeInPlace ? [step] : []))
                throw failure
            }
        }
    }

    private func rollBack(_ completed: [PlannedStep]) -> [String] {
        var failures: [String] = []
        for step in completed.reversed() {
            guard let undo = step.undo else { continue }
            do {
                logger.debug("undo: \(undo)")
                try kernel.execute(undo)
            } catch where undo.isRemoval && Self.isAlreadyGone(error) {
                continue
            } catch {
                logger.error("rollback step failed: \(undo): \(error)")
                failures.append("\(undo): \(error)")
            }
        }
        return failures
    }

    static func isAlreadyGone(_ error: NetlinkError) -> Bool {
        error.code == .notFound || error.code == .noSuchDevice
    }
}
