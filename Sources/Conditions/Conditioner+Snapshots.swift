#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Netlink
import Profiles
import Sandboxes

// What the conditioner shows: its conditions as snapshots, its profiles and history, and the
// history it keeps of every change.

extension Conditioner {
    /// The default condition; `verbose` adds linkcond's objects as the kernel has them.
    public func status(verbose: Bool = false) -> ConditionSnapshot {
        snapshot(of: defaultCondition, verbose: verbose)
    }

    /// One condition, the default one for `nil`; one that does not exist is shown off, as long
    /// as its interface exists. Inside another namespace, only the namespace is looked for: a
    /// reader, who may be anyone, does not get the daemon to read a container's devices.
    package func status(_ id: ConditionID?, verbose: Bool = false) throws(ConditionsRefusal) -> ConditionSnapshot {
        if let id, let namespace = id.namespace, id.interface.isEmpty, try !shapes(in: namespace) {
            // Which interface `pid/PID/` means takes entering the namespace to read its routes,
            // which a reader must not get the daemon to do where linkcond shapes nothing.
            return snapshot(of: makeCondition(id, identity: nil))
        }
        let id = try resolved(id)
        if let held = registry[id] {
            return snapshot(of: held, verbose: verbose)
        }
        let absent = try absentCondition(id, checkingInterface: id.namespace == nil)
        return snapshot(of: absent, verbose: verbose && id.namespace == nil)
    }

    /// Whether a condition is held in the namespace `namespace` names now (found by its
    /// identity, a `stat`, whatever path the condition's id names it by).
    private func shapes(in namespace: NetworkNamespaceReference) throws(ConditionsRefusal) -> Bool {
        let identity = try identity(of: namespace)
        return registry.ordered.contains { $0.namespaceIdentity == identity }
    }

    /// Every condition: the default one first, then the others by id.
    public func conditionList(verbose: Bool = false) -> [ConditionSnapshot] {
        orderedConditions.map { snapshot(of: $0, verbose: verbose) }
    }

    package func snapshot(of condition: Condition, verbose: Bool = false) -> ConditionSnapshot {
        let policy = condition.policy
        return ConditionSnapshot(
            id: condition.id, isDefault: condition.id == defaultID, target: condition.target, entry: policy.effective,
            since: policy.since,
            exemptions: planner.exemptions.ports.map(\.description) + planner.exemptions.networks.map(\.description),
            addresses: condition.hostAddresses.flatMap { $0.isEmpty ? nil : $0 },
            lease: policy.lease.map { lease in
                LeaseSnapshot(
                    profile: lease.entry.profile.name, holder: lease.holder.holder, clientBound: lease.clientBound,
                    expires: lease.expires, secondsLeft: lease.secondsLeft(at: now), restores: policy.baseline?.profile.name ?? "off"
                )
            },
            kernel: verbose ? condition.convergence.kernelObjects() : nil,
            sandbox: condition.sandbox, sandboxWarnings: condition.sandboxWarnings,
            scenario: condition.scenario?.progress(now: now, at: monotonicNow), trace: condition.trace?.progress(at: monotonicNow)
        )
    }

    /// The profiles that loaded, and the files that did not.
    public func profiles() -> ProfileCatalog {
        catalog
    }

    public func profile(named name: String) throws(ConditionsRefusal) -> ProfileEntry {
        try refusing { () throws(UnknownProfileError) in try catalog.entry(named: name) }
    }

    package func history(limit: Int) -> [HistoryRecord] {
        history.recent(limit)
    }

    package func record(_ condition: Condition, from previous: ProfileEntry?, reason: String, requester: Requester?, detail: String?) {
        record(
            condition, from: previous?.profile.name ?? "off", to: condition.policy.effective?.profile.name ?? "off",
            reason: reason, requester: requester, detail: detail
        )
    }

    package func record(_ condition: Condition, from: String?, to: String, reason: String, requester: Requester?, detail: String?) {
        let from = from ?? "off"
        var line = "condition: \(from) -> \(to) on \(condition.id) (\(reason))"
        if let requester { line += " by \(requester)" }
        if let detail { line += "; \(detail)" }
        logger.notice("\(line)")
        history.record(HistoryRecord(
            time: now.formatted(.iso8601), condition: condition.id.description, from: from, to: to, reason: reason,
            requester: requester?.asker, detail: detail
        ))
    }
}

extension Conditioner {
    /// The counters of every condition with objects in the kernel, the default one first,
    /// read now: each target's tree is surveyed once, however many conditions it holds.
    package func counterReadings() -> [ConditionCounters] {
        let conditions = orderedConditions
        let byTarget = Dictionary(grouping: conditions) { ObjectIdentifier($0.convergence) }.mapValues { sharing in
            sharing[0].convergence.counters(of: sharing.map(\.slot))
        }
        return conditions.compactMap { condition in
            guard let counters = byTarget[ObjectIdentifier(condition.convergence)]?[condition.slot] else { return nil }
            return ConditionCounters(
                id: condition.id.description, profile: condition.policy.effective?.profile.name,
                uplink: counters.uplink, downlink: counters.downlink
            )
        }
    }
}
