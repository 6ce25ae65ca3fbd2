#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPAddressText
import LinkCondVocabulary
import Logging
import Netlink
import NIOCore
import Profiles
import Sandboxes
import Shaping

// Leases: held while a client's connection stays open, or for a time; their ends, told to
// the client that waits.

extension Conditioner {
    /// Stops everything that runs on its own for a condition about to end: its scenario, its
    /// traces, its lease's timer. Returns the lease's runtime, whose client is still to hear why.
    func stopRuntime(of condition: inout Condition) -> Condition.LeaseRuntime? {
        endScenario(&condition)
        stopTraces(&condition)
        let runtime = condition.leaseRuntime
        runtime?.timer?.cancel()
        condition.leaseRuntime = nil
        return runtime
    }

    /// A lease that lasts while the client's connection stays open (`linkcond run`), at most
    /// `maximum`. `onEnd` hears about an end the client did not cause: expiry, take-over, shutdown.
    ///
    /// With `sandbox`, `id` is `pid/PID/eth0` and PID's network namespace a fresh one, which
    /// is joined to the host first; the sandbox ends with the lease.
    public func hold(
        _ choice: ProfileChoice, on id: ConditionID? = nil, by requester: Requester, maximum: LeaseDuration?, force: Bool = false,
        replacingForeign: Bool = false, sandbox: Bool = false, hostAddresses: [[UInt8]] = [],
        onEnd: @escaping @Sendable (LeaseEnd) -> Void
    ) throws(ConditionsRefusal) -> (lease: LeaseTicket, status: ConditionSnapshot) {
        try checkRunning()
        let (entry, scenario) = try resolve(choice)
        var condition = try sandbox ? makeSandbox(try resolved(id), for: requester) : self.condition(id, hostAddresses: hostAddresses)
        defer { settle(condition) }
        try refusing { () throws(HostNameError) in try condition.checkHostAddresses() }
        try refusing { () throws(LeaseConflictError) in try condition.policy.checkNoLease(against: requester, force: force, now: now) }
        let previous = condition.policy.effective
        let lease = condition.policy.makeLease(id: nextLeaseID(), entry, holder: requester, duration: maximum, clientBound: true, now: now)
        let displaced = try refusing { () throws(ShapingError) in
            try converge(
                &condition, to: condition.policy.wanting(baseline: condition.policy.baseline, lease: lease, now: now),
                replacingForeign: replacingForeign, onEnd: onEnd
            )
        }
        if let scenario { beginScenario(scenario, on: &condition, appliedAt: monotonicNow) }
        notifyTakeOver(displaced, on: condition, by: requester)
        let playing = scenario.map { "plays '\($0.entry.scenario.name)' " } ?? ""
        record(condition, from: previous, reason: "lease", requester: requester, detail: playing + "while its client runs" + (maximum.map { ", at most \($0)" } ?? ""))
        return (LeaseTicket(condition: condition.id, leaseID: lease.id), snapshot(of: condition))
    }

    /// The client of a client-bound lease closed its connection: bring the baseline back.
    /// Returns the new status, or `nil` if the lease had already ended.
    public func release(_ ticket: LeaseTicket) -> ConditionSnapshot? {
        guard var condition = registry[ticket.condition], condition.policy.lease?.id == ticket.leaseID else { return nil }
        defer { settle(condition) }
        // A sandbox's command, alone in it, usually ends before its client lets go.
        if condition.sandbox != nil, endIfNamespaceVanished(&condition) { return snapshot(of: condition) }
        endLease(&condition, reason: "lease-released", detail: "client closed its connection")
        endSandboxCondition(&condition)
        return snapshot(of: condition)
    }

    /// `linkcond release`: the holder ends their own lease early and gets the baseline back.
    public func releaseLease(on id: ConditionID? = nil, by requester: Requester) throws(ConditionsRefusal) -> ConditionSnapshot {
        try checkRunning()
        let id = try resolved(id)
        guard var condition = registry[id], let lease = condition.policy.lease, lease.isHeld(by: requester) else {
            throw ConditionsRefusal(NoLeaseError(holder: registry[id]?.policy.lease?.holder.holder))
        }
        defer { settle(condition) }
        let previous = condition.policy.effective
        let wanted = condition.policy.wanting(baseline: condition.policy.baseline, lease: nil, now: now)
        let ended = try refusing { () throws(ShapingError) in try converge(&condition, to: wanted, replacingForeign: false) }
        record(condition, from: previous, reason: "lease-released", requester: requester, detail: "ended early by its holder (\(lease.entry.profile.name))")
        ended?.onEnd?(LeaseEnd(reason: .released, condition: snapshot(of: condition)))
        return snapshot(of: condition)
    }

    func nextLeaseID() -> UInt64 {
        lastLeaseID += 1
        return lastLeaseID
    }

    /// Tells the client of a lease that `requester` forced its way past that it is over.
    func notifyTakeOver(_ displaced: Condition.LeaseRuntime?, on condition: Condition, by requester: Requester) {
        guard let displaced else { return }
        logger.notice("lease \(displaced.leaseID) on \(condition.id) taken over by \(requester)")
        displaced.onEnd?(LeaseEnd(reason: .takenOver(by: requester.holder), condition: snapshot(of: condition)))
    }

    /// One timer for a condition's current lease's end: no wakeups at all while there is no lease.
    func scheduleExpiry(_ condition: inout Condition, onEnd: (@Sendable (LeaseEnd) -> Void)? = nil) {
        guard let lease = condition.policy.lease, condition.leaseRuntime?.leaseID != lease.id else { return }
        var runtime = Condition.LeaseRuntime(leaseID: lease.id, onEnd: onEnd)
        if let expires = lease.expires {
            let ticket = LeaseTicket(condition: condition.id, leaseID: lease.id)
            let delay = TimeAmount.milliseconds(Int64((expires.timeIntervalSince(now) * 1000).rounded(.up)))
            runtime.timer = schedule(in: delay, ticket) { conditioner, ticket in conditioner.expire(ticket) }
        }
        condition.leaseRuntime = runtime
    }

    func expire(_ ticket: LeaseTicket) {
        guard var condition = registry[ticket.condition], condition.policy.lease?.id == ticket.leaseID else { return }
        defer { settle(condition) }
        let ended = endLease(&condition, reason: "lease-expired", detail: nil)
        endSandboxCondition(&condition)
        ended?.onEnd?(LeaseEnd(reason: .expired, condition: snapshot(of: condition)))
    }

    /// Ends a condition's current lease and brings its baseline back; returns the ended lease's
    /// runtime. If the kernel refuses, the lease's condition stays in force as the baseline,
    /// and the error is logged.
    @discardableResult
    func endLease(_ condition: inout Condition, reason: String, detail: String?) -> Condition.LeaseRuntime? {
        guard let lease = condition.policy.lease else { return nil }
        var ended: Condition.LeaseRuntime?
        do {
            ended = try converge(&condition, to: condition.policy.wanting(baseline: condition.policy.baseline, lease: nil, now: now), replacingForeign: false)
        } catch {
            logger.error("cannot end the lease on '\(lease.entry.profile.name)' on \(condition.id): \(error); keeping it in force without a lease")
            condition.policy = condition.policy.wanting(baseline: lease.entry, lease: nil, now: now)
            persist(condition)
            ended = condition.leaseRuntime
            ended?.timer?.cancel()
            condition.leaseRuntime = nil
        }
        record(condition, from: lease.entry, reason: reason, requester: nil, detail: detail ?? "held by \(lease.holder)")
        return ended
    }
}
