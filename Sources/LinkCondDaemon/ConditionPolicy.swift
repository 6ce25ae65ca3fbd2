import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Profiles

/// What should be in force, and who may change it: a *baseline* (set by plain `activate` and
/// `off`) and at most one *lease* on top of it. A pure value: deciding needs no kernel, no
/// clock beyond what it is given, no I/O.
struct ConditionPolicy: Sendable, Equatable {
    var baseline: CatalogEntry?
    var baselineSince: Date
    var lease: Lease?
    private(set) var nextLeaseID: UInt64 = 1

    init(baseline: CatalogEntry? = nil, baselineSince: Date = Date(), lease: Lease? = nil) {
        self.baseline = baseline
        self.baselineSince = baselineSince
        self.lease = lease
        if let lease { nextLeaseID = lease.id + 1 }
    }

    /// The condition the kernel should have.
    var effective: CatalogEntry? { lease?.entry ?? baseline }

    /// When the condition in force (or "off") began.
    var since: Date { lease?.since ?? baselineSince }

    /// A change by `requester` is refused while someone holds a lease, unless `force`.
    func checkNoLease(against requester: Requester, force: Bool) throws(LeaseConflictError) {
        guard let lease, !force else { return }
        throw LeaseConflictError(
            profile: lease.entry.profile.name, holder: lease.holder.document, secondsLeft: lease.secondsLeft,
            heldByRequester: lease.isHeld(by: requester), clientBound: lease.clientBound
        )
    }

    /// A new lease with the next id.
    mutating func makeLease(_ entry: CatalogEntry, holder: Requester, duration: LeaseDuration?, clientBound: Bool, now: Date = Date()) -> Lease {
        defer { nextLeaseID += 1 }
        return Lease(
            id: nextLeaseID, entry: entry, holder: holder, since: now,
            expires: duration.map { now.addingTimeInterval($0.seconds) }, clientBound: clientBound
        )
    }

    /// The policy with `baseline` and `lease` wanted; `baselineSince` moves only when the
    /// baseline's values change.
    func wanting(baseline newBaseline: CatalogEntry?, lease newLease: Lease?, now: Date = Date()) -> ConditionPolicy {
        var next = self
        next.baseline = newBaseline
        next.lease = newLease
        if baseline?.profile != newBaseline?.profile {
            next.baselineSince = now
        }
        return next
    }
}
