#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

extension Condition {
    /// The condition as status shows it: its lease's time left by the leases' clock (`now`),
    /// its scenario's and trace's progress by the players' (`monotonicNow`).
    func snapshot(isDefault: Bool, exemptions: [String], now: Date, monotonicNow: NIODeadline, verbose: Bool) -> ConditionSnapshot {
        ConditionSnapshot(
            id: id, isDefault: isDefault, target: target, entry: policy.effective, since: policy.since, exemptions: exemptions,
            addresses: hostAddresses.flatMap { $0.isEmpty ? nil : $0 },
            lease: policy.lease.map { lease in
                LeaseSnapshot(
                    profile: lease.entry.profile.name, holder: lease.holder.holder, clientBound: lease.clientBound,
                    expires: lease.expires, secondsLeft: lease.secondsLeft(at: now), restores: policy.baseline?.profile.name ?? "off"
                )
            },
            kernel: verbose ? convergence.kernelObjects() : nil,
            sandbox: sandbox, sandboxWarnings: sandboxWarnings,
            scenario: scenario?.progress(now: now, at: monotonicNow), trace: trace?.progress(at: monotonicNow)
        )
    }
}

extension ConditionRegistry {
    /// The counters of every condition with objects in the kernel, the default one first,
    /// read now: each target's tree is surveyed once, however many conditions it holds.
    func counterReadings() -> [ConditionCounters] {
        let conditions = ordered
        let grouped = Dictionary(grouping: conditions) { ObjectIdentifier($0.convergence) }
        let byTarget = grouped.mapValues { sharing in sharing[0].convergence.counters(of: sharing.map(\.slot)) }
        let failedByTarget = grouped.mapValues { sharing in sharing[0].convergence.failedPackets(of: sharing.map(\.slot)) }
        return conditions.compactMap { condition in
            guard let counters = byTarget[ObjectIdentifier(condition.convergence)]?[condition.slot] else { return nil }
            let profile = condition.policy.effective?.profile
            return ConditionCounters(
                id: condition.id.description, profile: profile?.name,
                uplink: counters.uplink, downlink: counters.downlink,
                failure: profile?.failureName,
                failedPackets: failedByTarget[ObjectIdentifier(condition.convergence)]?[condition.slot]
            )
        }
    }
}
