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
            return snapshot(of: factory.make(id, identity: nil, beside: registry, now: now))
        }
        let id = try resolved(id)
        if let held = registry[id] {
            return snapshot(of: held, verbose: verbose)
        }
        let absent = try factory.makeAbsent(id, checkingInterface: id.namespace == nil, beside: registry, now: now)
        return snapshot(of: absent, verbose: verbose && id.namespace == nil)
    }

    /// Whether a condition is held in the namespace `namespace` names now (found by its
    /// identity, a `stat`, whatever path the condition's id names it by).
    private func shapes(in namespace: NetworkNamespaceReference) throws(ConditionsRefusal) -> Bool {
        let identity = try namespaces.identity(of: namespace)
        return registry.ordered.contains { $0.namespaceIdentity == identity }
    }

    /// Every condition: the default one first, then the others by id.
    public func conditionList(verbose: Bool = false) -> [ConditionSnapshot] {
        orderedConditions.map { snapshot(of: $0, verbose: verbose) }
    }

    package func snapshot(of condition: Condition, verbose: Bool = false) -> ConditionSnapshot {
        condition.snapshot(isDefault: condition.id == defaultID, exemptions: exemptions, now: now, monotonicNow: monotonicNow, verbose: verbose)
    }

    /// Traffic that is never shaped, as status names it (`tcp/22`).
    private var exemptions: [String] {
        planner.exemptions.ports.map(\.description) + planner.exemptions.networks.map(\.description)
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
        record(condition.id, from: from, to: to, reason: reason, requester: requester, detail: detail)
        tellCaptures(of: condition, reason: reason, detail: detail)
    }

    /// Logs and keeps a history entry of the condition `id`, without the condition at hand.
    func record(_ id: ConditionID, from: String?, to: String, reason: String, requester: Requester?, detail: String?) {
        let change = HistoryRecord(id, from: from, to: to, reason: reason, requester: requester, detail: detail, at: now)
        logger.notice("\(change.logLine(by: requester))")
        history.record(change)
    }
}

extension Conditioner {
    /// The counters of every condition with objects in the kernel, the default one first.
    package func counterReadings() -> [ConditionCounters] {
        registry.counterReadings()
    }
}
