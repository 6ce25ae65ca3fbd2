#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LinkCondVocabulary
import Logging
import Profiles

/// What should be in force, and who may change it: a *baseline* (set by plain `activate` and
/// `off`) and at most one *lease* on top of it. A pure value: deciding needs no kernel, no
/// clock beyond what it is given, no I/O.
struct ConditionPolicy: Sendable, Equatable {
    var baseline: ProfileEntry?
    var baselineSince: Date
    var lease: Lease?

    init(baseline: ProfileEntry? = nil, baselineSince: Date, lease: Lease? = nil) {
        self.baseline = baseline
        self.baselineSince = baselineSince
        self.lease = lease
    }

    /// The condition the kernel should have.
    var effective: ProfileEntry? { lease?.entry ?? baseline }

    /// When the condition in force (or "off") began.
    var since: Date { lease?.since ?? baselineSince }

    /// A change by `requester` is refused while someone holds a lease, unless `force`.
    func checkNoLease(against requester: Requester, force: Bool, now: Date) throws(LeaseConflictError) {
        guard let lease, !force else { return }
        throw LeaseConflictError(
            profile: lease.entry.profile.name, holder: lease.holder.holder, secondsLeft: lease.secondsLeft(at: now),
            heldByRequester: lease.isHeld(by: requester), clientBound: lease.clientBound
        )
    }

    /// A new lease; `id` is unique among all the daemon's leases, so that a client's closed
    /// connection can never end a later lease on a condition that was switched off meanwhile.
    func makeLease(id: UInt64, _ entry: ProfileEntry, holder: Requester, duration: LeaseDuration?, clientBound: Bool, now: Date) -> Lease {
        Lease(
            id: id, entry: entry, holder: holder, since: now,
            expires: duration.map { now.addingTimeInterval($0.seconds) }, clientBound: clientBound
        )
    }

    /// The policy with `baseline` and `lease` wanted; `baselineSince` moves only when the
    /// baseline's values change.
    func wanting(baseline newBaseline: ProfileEntry?, lease newLease: Lease?, now: Date) -> ConditionPolicy {
        var next = self
        next.baseline = newBaseline
        next.lease = newLease
        if baseline?.profile != newBaseline?.profile {
            next.baselineSince = now
        }
        return next
    }
}

extension ConditionPolicy {
    /// This policy with its profiles as `fresh` has them now: a profile whose file no longer
    /// loads keeps its values (and is logged), an ad-hoc one is left alone.
    func refreshed(from fresh: ProfileCatalog, now: Date, logger: Logger) -> ConditionPolicy {
        func refreshed(_ entry: ProfileEntry) -> ProfileEntry {
            guard !entry.isAdHoc else { return entry }
            guard let update = fresh.entries.first(where: { $0.file == entry.file }) else {
                logger.warning("reload: \(entry.file) no longer loads; '\(entry.profile.name)' keeps its values")
                return entry
            }
            return update
        }
        var wanted = wanting(baseline: baseline.map(refreshed), lease: lease, now: now)
        if let lease {
            wanted.lease?.entry = refreshed(lease.entry)
        }
        return wanted
    }
}
