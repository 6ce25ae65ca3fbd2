import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPAddressText
import Netlink
import Profiles
import Sandboxes

// What the conditioner shows: its status, profiles and history as the API's documents, and
// the history it keeps of every change.

extension Conditioner {
    /// The default condition; `verbose` adds linkcond's objects as the kernel has them.
    public func status(verbose: Bool = false) -> StatusResponse {
        status(of: defaultCondition, verbose: verbose)
    }

    /// One condition, the default one for `nil`; one that does not exist is shown off, as long
    /// as its interface exists. Inside another namespace, only the namespace is looked for: a
    /// reader, who may be anyone, does not get the daemon to read a container's devices.
    package func status(_ id: ConditionID?, verbose: Bool = false) throws -> StatusResponse {
        let id = try resolved(id)
        return status(of: try conditions[id] ?? absentCondition(id, checkingInterface: id.namespace == nil), verbose: verbose && (conditions[id] != nil || id.namespace == nil))
    }

    /// Every condition: the default one first, then the others by id.
    public func conditionList(verbose: Bool = false) -> ConditionListResponse {
        ConditionListResponse(conditions: orderedConditions.map { status(of: $0, verbose: verbose) })
    }

    package func status(of condition: Condition, verbose: Bool = false) -> StatusResponse {
        let policy = condition.policy
        let effective = policy.effective
        var status = StatusResponse(
            id: condition.id.description,
            isDefault: condition.id == defaultID,
            interface: condition.target.interface,
            namespace: condition.id.namespace?.description,
            peer: condition.id.peer?.description,
            ifb: condition.target.ifb,
            active: effective != nil,
            profile: effective.map(ProfileDocument.init),
            since: policy.since.formatted(.iso8601),
            exemptions: planner.exemptions.ports.map(\.description) + planner.exemptions.networks.map(\.description),
            lease: policy.lease.map { document($0, restoring: policy.baseline) }
        )
        status.scenario = scenarioDocument(condition)
        status.trace = traceDocument(condition)
        status.addresses = condition.hostAddresses.flatMap { $0.isEmpty ? nil : $0.map(formatIPAddress) }
        if verbose {
            status.kernel = condition.convergence.kernelObjects().map { reading in
                let counters = reading.statistics
                return KernelObjectDocument(
                    device: reading.device, object: reading.object, packets: counters.packets, bytes: counters.bytes,
                    drops: counters.drops, overlimits: counters.overlimits, queuedPackets: counters.queuedPackets,
                    queuedBytes: counters.queuedBytes
                )
            }
        }
        status.sandbox = condition.sandbox.map {
            SandboxDocument(
                address: $0.sandboxAddressText, gateway: $0.hostAddressText, hostInterface: $0.hostInterface,
                warnings: condition.sandboxWarnings.isEmpty ? nil : condition.sandboxWarnings
            )
        }
        return status
    }

    public func profiles() -> ProfileListResponse {
        ProfileListResponse(
            profiles: catalog.sortedEntries.map(ProfileSummary.init),
            problems: catalog.problems.map(ProfileProblem.init)
        )
    }

    public func profile(named name: String) throws(UnknownProfileError) -> ProfileDocument {
        ProfileDocument(try catalog.entry(named: name))
    }

    package func history(limit: Int) -> [HistoryRecord] {
        history.recent(limit)
    }

    private func document(_ lease: Lease, restoring baseline: ProfileEntry?) -> LeaseDocument {
        LeaseDocument(
            profile: lease.entry.profile.name,
            holder: lease.holder.document,
            kind: lease.clientBound ? .clientBound : .timed,
            expires: lease.expires?.formatted(.iso8601),
            secondsLeft: lease.secondsLeft(at: now),
            restores: baseline?.profile.name ?? "off"
        )
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
            time: Date().formatted(.iso8601), condition: condition.id.description, from: from, to: to, reason: reason,
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
