#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPAddressText
import LinkCondVocabulary
import Logging
import Profiles

extension PersistedState {
    /// What a condition's state file keeps: its goal, and what names it across a restart.
    init(_ condition: Condition) {
        let policy = condition.policy
        self.init(
            interface: condition.id.interface,
            namespace: condition.id.namespace?.description,
            namespaceIdentity: condition.namespaceIdentity,
            baseline: policy.baseline.map(StoredProfile.init),
            baselineSince: policy.baselineSince,
            lease: policy.lease.map {
                StoredLease(
                    profile: StoredProfile($0.entry), holder: $0.holder.holder, since: $0.since, expires: $0.expires, clientBound: $0.clientBound
                )
            },
            slot: condition.slotNumber,
            sandbox: condition.sandbox?.index,
            hostAddresses: condition.hostAddresses?.map(formatIPAddress)
        )
    }

    /// The policy a restarted daemon starts from for `id`: the stored one, less a lease that
    /// ended while no daemon ran (expired, or bound to a client whose connection died with it).
    /// A kept lease takes a new id from `leaseID`.
    func recoveredPolicy(for id: ConditionID, now: Date, leaseID: () -> UInt64, logger: Logger) -> ConditionPolicy {
        guard interface == id.interface, namespace == id.namespace?.description else { return ConditionPolicy(baselineSince: now) }
        let baselineEntry: ProfileEntry?
        do {
            baselineEntry = try baseline?.entry()
        } catch {
            logger.error("startup: ignoring the stored condition on \(id.interface): \(error)")
            return ConditionPolicy(baselineSince: now)
        }
        var kept: Lease?
        let leaseEntry: ProfileEntry?
        do {
            leaseEntry = try lease?.profile.entry()
        } catch {
            logger.error("startup: dropping the stored lease on \(id.interface): \(error)")
            leaseEntry = nil
        }
        if let stored = lease, let entry = leaseEntry {
            if stored.clientBound {
                logger.notice("startup: dropping the lease on '\(entry.profile.name)' held by \(stored.holder): its client's connection ended with the previous daemon")
            } else if let expires = stored.expires, expires <= now {
                logger.notice("startup: the lease on '\(entry.profile.name)' held by \(stored.holder) expired while no daemon ran")
            } else {
                kept = Lease(
                    id: leaseID(), entry: entry, holder: Requester(holder: stored.holder), since: stored.since,
                    expires: stored.expires, clientBound: false
                )
            }
        }
        return ConditionPolicy(baseline: baselineEntry, baselineSince: baselineSince, lease: kept)
    }
}
