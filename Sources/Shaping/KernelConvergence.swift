import Logging
import Netlink
import Profiles

/// Where in a target's tree a condition's objects are: the whole interface's classes, or the
/// slot of a condition with a match, which fixes its class, leaf and filter handles.
package enum ConditionSlot: Hashable {
    case whole
    case match(UInt16, PeerMatch)
}

/// Brings one target's tc tree to what its conditions want, or to nothing, and knows what
/// the kernel has now. Shared by the conditions of one target (the whole interface and those
/// with a match); the `Conditioner` calls it one change at a time, through the engine all
/// targets in the daemon's network namespace share (a target in another namespace has an
/// engine of its own, which enters that namespace).
package final class KernelConvergence {
    package let target: ShapingTarget
    package let planner: Planner
    private let engine: ShapingEngine
    private let logger: Logger
    /// The plan the kernel has now, `nil` when linkcond has nothing on the target.
    package private(set) var applied: TrafficPlan?
    /// What `applied` was planned from.
    private var whole: Profile?
    private var matches: [UInt16: MatchedCondition] = [:]
    /// The failure rules the kernel has now for the target, `nil` when it has none.
    package private(set) var appliedRules: FailureRuleset?

    /// How start-up found the kernel, for logs and history.
    package enum Recovery: Equatable {
        /// Nothing to keep, nothing left.
        case nothingToDo
        /// Nothing to keep; an earlier daemon's tree was removed.
        case removedLeftovers
        /// The tree in the kernel was exactly the wanted one's: its values were rewritten.
        case readopted
        /// The tree was missing or incomplete; it was built anew (`deviations` says how it differed).
        case rebuilt(deviations: [String])
    }

    package init(target: ShapingTarget, planner: Planner, engine: ShapingEngine, logger: Logger) {
        self.target = target
        self.planner = planner
        self.engine = engine
        self.logger = logger
    }

    /// The profile in force in `slot`, `nil` when it has none.
    package func profile(in slot: ConditionSlot) -> Profile? {
        switch slot {
        case .whole: return whole
        case .match(let number, _): return matches[number]?.profile
        }
    }

    /// Whether some condition has objects in the tree.
    package var isInUse: Bool { applied != nil }

    /// Builds, changes in place, or removes, so that `slot` has `profile`'s objects and every
    /// other slot keeps its own.
    ///
    /// On failure the kernel is back where it was (the engine rolls back) and the error says why.
    package func converge(_ slot: ConditionSlot, to profile: Profile?, replacingForeign: Bool = false) throws(ShapingError) {
        var nextWhole = whole
        var nextMatches = matches
        switch slot {
        case .whole:
            nextWhole = profile
        case .match(let number, let match):
            nextMatches[number] = profile.map { MatchedCondition(slot: number, match: match, profile: $0) }
        }
        let next: TrafficPlan?
        var changeInPlace: (TrafficPlan, TrafficPlan) throws(ShapingError) -> Void = engine.change(from:to:)
        // One peer's switch between profiles replaces its own objects in the applied plan: its
        // cost stays flat however many other peers the target holds.
        if case .match(let number, let match) = slot, let profile, let current = applied, matches[number] != nil,
           let replaced = planner.replacingProfile(of: MatchedCondition(slot: number, match: match, profile: profile), in: current) {
            next = replaced
            let engine = self.engine
            changeInPlace = { (current, next) throws(ShapingError) in try engine.changeSlot(number, from: current, to: next) }
        } else {
            next = planner.plan(on: target, whole: nextWhole, matches: Array(nextMatches.values))
        }
        // The failure rules first, in one transaction of their own, so that a tree refused by
        // the kernel can be followed by the rules that were there, written back.
        let nextRules = try planner.failureRules(on: target, whole: nextWhole, matches: Array(nextMatches.values))
        // The link goes down (or comes back) first of all, and back as it was if anything after fails.
        let isDown = whole?.failure == .linkDown
        let goesDown = nextWhole?.failure == .linkDown
        if goesDown != isDown {
            try engine.setLinkDown(goesDown, on: target)
        }
        do throws(ShapingError) {
            if nextRules != appliedRules {
                try engine.install(nextRules, on: target)
            }
            do {
                try convergeTree(from: applied, to: next, changeInPlace: changeInPlace, replacingForeign: replacingForeign)
            } catch {
                guard nextRules != appliedRules else { throw error }
                var failure = error
                do {
                    try engine.install(appliedRules, on: target)
                } catch {
                    failure.rollbackFailures.append(error.message)
                }
                throw failure
            }
        } catch {
            guard goesDown != isDown else { throw error }
            var failure = error
            do {
                try engine.setLinkDown(isDown, on: target)
            } catch {
                failure.rollbackFailures.append(error.message)
            }
            throw failure
        }
        appliedRules = nextRules
        applied = next
        whole = nextWhole
        matches = nextMatches
    }

    private func convergeTree(
        from applied: TrafficPlan?, to next: TrafficPlan?, changeInPlace: (TrafficPlan, TrafficPlan) throws(ShapingError) -> Void, replacingForeign: Bool
    ) throws(ShapingError) {
        switch (applied, next) {
        case (nil, nil):
            return
        case (.some, nil):
            try engine.remove(target)
        case (nil, let plan?):
            try engine.apply(plan, replacingForeign: replacingForeign)
        case (let current?, let plan?):
            do {
                try changeInPlace(current, plan)
            } catch {
                guard try treeIsMissing(current, after: error) else { throw error }
                logger.warning("linkcond's tree on \(target.interface) was changed behind its back; rebuilding it")
                try engine.remove(target)
                try engine.apply(plan, replacingForeign: replacingForeign)
            }
        }
    }

    /// Start-up: re-adopts a tree that is exactly the wanted one (rewriting its values, which a
    /// daemon killed halfway through a switch may have left mixed), and rebuilds or removes
    /// anything less. `wanted` has every condition of the target that has a profile.
    package func recover(whole: Profile?, matches: [MatchedCondition]) throws(ShapingError) -> Recovery {
        let survey = try engine.survey(target)
        // Written anew whatever the kernel holds: one transaction makes the table exactly this.
        let rules = try planner.failureRules(on: target, whole: whole, matches: matches)
        try engine.install(rules, on: target)
        appliedRules = rules
        // Down if the condition says so; back if an earlier daemon took it down for a condition gone since.
        try engine.setLinkDown(whole?.failure == .linkDown, on: target)
        guard let plan = planner.plan(on: target, whole: whole, matches: matches) else {
            // Nothing to shape, but a failure (rules, a link down) that a later change must undo.
            self.whole = whole
            self.matches = Dictionary(uniqueKeysWithValues: matches.map { ($0.slot, $0) })
            guard survey.hasLinkcondObjects else { return .nothingToDo }
            try engine.remove(target)
            return .removedLeftovers
        }
        func adopt() {
            applied = plan
            self.whole = whole
            self.matches = Dictionary(uniqueKeysWithValues: matches.map { ($0.slot, $0) })
        }
        if survey.isComplete(for: plan) {
            do {
                try engine.rewrite(plan)
                adopt()
                return .readopted
            } catch {
                logger.warning("startup: cannot re-adopt the tree on \(target.interface) (\(error.message)); rebuilding it")
            }
        }
        let deviations = survey.hasLinkcondObjects ? survey.deviations(from: plan) : []
        try engine.remove(target)
        try engine.apply(plan)
        adopt()
        return .rebuilt(deviations: deviations)
    }

    /// linkcond's qdiscs and classes on the interface and its IFB, with their counters; empty
    /// when the kernel cannot be read.
    package func kernelObjects() -> [KernelObjectReading] {
        guard let survey = try? engine.survey(target) else { return [] }
        func readings(_ device: String, qdiscs: [QdiscInfo], classes: [ClassInfo]) -> [KernelObjectReading] {
            let ours = qdiscs.filter { ReservedHandles.isLinkcondQdisc($0.handle) || $0.handle == ReservedHandles.ingress }
            let objects = ours.map { ("qdisc \($0.kind) \($0.handle) parent \($0.parent)", $0.statistics) }
                + classes.filter { $0.handle.qdisc == ReservedHandles.root }.map { ("class \($0.kind) \($0.handle) parent \($0.parent)", $0.statistics) }
            return objects.map { KernelObjectReading(device: device, object: $0, statistics: $1 ?? .zero) }
        }
        return readings(target.interface, qdiscs: survey.qdiscs, classes: survey.classes)
            + readings(target.ifb, qdiscs: survey.ifbQdiscs, classes: survey.ifbClasses)
    }

    /// The counters of each slot's leaves and of the queues below them, summed per direction,
    /// from one survey of the target: the whole interface's bulk and DNS leaves, or a matched
    /// condition's own leaf. A slot without a profile has none.
    package func counters(of slots: [ConditionSlot]) -> [ConditionSlot: (uplink: DirectionCounters, downlink: DirectionCounters)] {
        let wanted = slots.filter { profile(in: $0) != nil }
        guard !wanted.isEmpty, let survey = try? engine.survey(target) else { return [:] }
        func byHandle(_ qdiscs: [QdiscInfo]) -> [TrafficControlHandle: TrafficStatistics] {
            Dictionary(qdiscs.compactMap { qdisc in qdisc.statistics.map { (qdisc.handle, $0) } }, uniquingKeysWith: +)
        }
        func direction(_ leaves: [TrafficControlHandle], in statistics: [TrafficControlHandle: TrafficStatistics]) -> DirectionCounters {
            DirectionCounters(
                leaves: leaves.compactMap { statistics[$0] }.reduce(.zero, +),
                queueDrops: leaves.compactMap { ReservedHandles.queue(below: $0).flatMap { statistics[$0]?.drops } }.reduce(0, +)
            )
        }
        let (uplink, downlink) = (byHandle(survey.qdiscs), byHandle(survey.ifbQdiscs))
        var counters: [ConditionSlot: (uplink: DirectionCounters, downlink: DirectionCounters)] = [:]
        for slot in wanted {
            let leaves: [TrafficControlHandle] = switch slot {
            case .whole: [ReservedHandles.bulkLeaf, ReservedHandles.dnsLeaf]
            case .match(let number, _): [ReservedHandles.matchLeaf(number)]
            }
            counters[slot] = (direction(leaves, in: uplink), direction(leaves, in: downlink))
        }
        return counters
    }

    /// What each slot's failure refused or dropped so far, in packets, from one reading of the
    /// target's table: only slots whose profile has a failure; empty when the table cannot be read.
    package func failedPackets(of slots: [ConditionSlot]) -> [ConditionSlot: UInt64] {
        let failing = slots.filter { profile(in: $0)?.failureName != nil }
        guard !failing.isEmpty, appliedRules != nil, let counts = try? engine.failureCounts(on: target) else { return [:] }
        var packets: [ConditionSlot: UInt64] = [:]
        for slot in failing {
            let number: UInt16? = if case .match(let number, _) = slot { number } else { nil }
            packets[slot] = counts[FailureRuleset.tag(of: number)] ?? 0
        }
        return packets
    }

    /// What the kernel has on the target now.
    package func survey() throws(ShapingError) -> KernelSurvey {
        try engine.survey(target)
    }

    /// Forgets the applied tree without touching the kernel: its namespace, and every object
    /// in it, is gone.
    package func forget() {
        applied = nil
        appliedRules = nil
        whole = nil
        matches = [:]
    }

    /// Removes every linkcond object from the target, whatever this daemon believes it applied.
    package func removeAll() throws(ShapingError) {
        forget()
        var failure: ShapingError?
        do { try engine.setLinkDown(false, on: target) } catch { failure = error }
        do { try engine.install(nil, on: target) } catch { failure = error }
        try engine.remove(target)
        if let failure { throw failure }
    }

    /// Removes the failure tables in this target's namespace that none of `kept` names: those a
    /// daemon left for conditions it took with it. Returns what it removed; a table that cannot
    /// be removed is logged and left.
    package func removeFailureTables(except kept: Set<String>) -> [String] {
        let tables: [String]
        do {
            tables = try engine.failureTables()
        } catch {
            logger.warning("cannot list linkcond's failure tables: \(error.message)")
            return []
        }
        var removed: [String] = []
        for table in tables where !kept.contains(table) {
            do {
                try engine.removeFailureTable(table)
                removed.append(table)
            } catch {
                logger.error("\(error.message)")
            }
        }
        return removed
    }

    /// Whether a failed switch failed because the tree is no longer what was applied (deleted
    /// by hand, or the interface was recreated), which a rebuild can fix.
    private func treeIsMissing(_ plan: TrafficPlan, after error: ShapingError) throws(ShapingError) -> Bool {
        guard error.netlink?.code == .notFound || error.netlink?.code == .noSuchDevice else { return false }
        return try !engine.survey(target).isComplete(for: plan)
    }
}

/// One of linkcond's kernel objects as read: on which device, which qdisc or class, its counters.
public struct KernelObjectReading: Sendable, Equatable {
    public var device: String
    /// `qdisc netem 7a10: parent 7a00:10`, `class htb 7a00:10 parent 7a00:1`.
    public var object: String
    public var statistics: TrafficStatistics
}
