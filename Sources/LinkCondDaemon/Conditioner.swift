import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOCore
import Profiles
import Shaping

/// The daemon's state: which condition the interface is in, who holds it, and the only path to
/// change it.
///
/// There is a *baseline* (set by plain `activate` and `off`) and at most one *lease* on top of
/// it, which ends by itself (after a time, or when its client goes away) and brings the
/// baseline back. An actor, so requests are applied one after another; it owns the shaping
/// engine and with it the netlink socket.
public actor Conditioner {
    struct Applied {
        var entry: CatalogEntry
        var plan: TrafficPlan
    }

    struct Lease {
        var id: UInt64
        var entry: CatalogEntry
        var holder: Requester
        var since: Date
        var expires: Date?
        var clientBound: Bool
        var timer: Scheduled<Void>?
        /// For a client-bound lease: tells the client's connection that the lease ended.
        var onEnd: (@Sendable (LeaseEvent) -> Void)?
    }

    public nonisolated let target: ShapingTarget
    private let engine: ShapingEngine
    private let planner: Planner
    private let eventLoop: any EventLoop
    private let stateStore: StateStore?
    private let logger: Logger
    private let profileDirectories: [String]
    private var catalog: ProfileCatalog
    private var history: ConditionHistory

    private var baseline: CatalogEntry?
    private var baselineSince = Date()
    private var lease: Lease?
    /// What the kernel has now.
    private var applied: Applied?
    private var nextLeaseID: UInt64 = 1

    public init(
        engine: sending ShapingEngine,
        target: ShapingTarget,
        planner: Planner,
        catalog: ProfileCatalog,
        profileDirectories: [String] = [],
        eventLoop: any EventLoop,
        stateDirectory: String? = nil,
        historyFile: String? = nil,
        logger: Logger
    ) {
        self.engine = engine
        self.target = target
        self.planner = planner
        self.catalog = catalog
        self.profileDirectories = profileDirectories
        self.eventLoop = eventLoop
        self.stateStore = stateDirectory.map { StateStore(directory: $0, interface: target.interface) }
        self.history = ConditionHistory(file: historyFile.map { URL(fileURLWithPath: $0) })
        self.logger = logger
    }

    private var effective: CatalogEntry? { lease?.entry ?? baseline }

    // MARK: Reading

    public func status() -> StatusResponse {
        let since = lease?.since ?? baselineSince
        return StatusResponse(
            interface: target.interface,
            ifb: target.ifb,
            active: effective != nil,
            profile: effective.map(ProfileDocument.init),
            since: since.formatted(.iso8601),
            exemptions: planner.exemptions.ports.map(\.description) + planner.exemptions.networks.map(\.description),
            lease: lease.map(document)
        )
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

    public func history(limit: Int) -> HistoryResponse {
        HistoryResponse(entries: history.recent(limit))
    }

    // MARK: Changing

    /// Puts the interface into the named profile's condition, for good or, with `duration`, as a
    /// lease that reverts by itself.
    ///
    /// From off, the tree is built; from another profile, its values are changed in place. On
    /// any failure the previous condition stays in force and the error says why. A lease held
    /// by someone else is a conflict unless `force`.
    public func activate(
        _ name: String, by requester: Requester, for duration: LeaseDuration? = nil,
        force: Bool = false, replacingForeign: Bool = false
    ) throws -> StatusResponse {
        let entry = try catalog.entry(named: name)
        try checkNoLease(against: requester, force: force)
        let previous = effective
        let displaced = lease
        if let duration {
            let newLease = makeLease(entry, holder: requester, duration: duration, clientBound: false)
            try converge(baseline: baseline, lease: newLease, replacingForeign: replacingForeign)
            scheduleExpiry()
            record(from: previous, reason: "lease", requester: requester, detail: "for \(duration)")
        } else {
            try converge(baseline: entry, lease: nil, replacingForeign: replacingForeign)
            record(from: previous, reason: "activate", requester: requester, detail: nil)
        }
        notifyTakeOver(of: displaced, by: requester)
        return status()
    }

    /// Removes all shaping. Also cleans up after an earlier run when already off.
    public func deactivate(by requester: Requester, force: Bool = false) throws -> StatusResponse {
        try checkNoLease(against: requester, force: force)
        let previous = effective
        let displaced = lease
        try converge(baseline: nil, lease: nil, replacingForeign: false)
        if previous == nil {
            // Already off: still remove whatever an earlier daemon may have left.
            try engine.remove(target)
        } else {
            record(from: previous, reason: "off", requester: requester, detail: nil)
        }
        notifyTakeOver(of: displaced, by: requester)
        return status()
    }

    /// A lease that lasts while the client's connection stays open (`linkcond run`), at most
    /// `maximum`. `onEnd` hears about an end the client did not cause: expiry, take-over, shutdown.
    public func hold(
        _ name: String, by requester: Requester, maximum: LeaseDuration?, force: Bool = false,
        replacingForeign: Bool = false, onEnd: @escaping @Sendable (LeaseEvent) -> Void
    ) throws -> (leaseID: UInt64, status: StatusResponse) {
        let entry = try catalog.entry(named: name)
        try checkNoLease(against: requester, force: force)
        let previous = effective
        let displaced = lease
        var newLease = makeLease(entry, holder: requester, duration: maximum, clientBound: true)
        newLease.onEnd = onEnd
        try converge(baseline: baseline, lease: newLease, replacingForeign: replacingForeign)
        scheduleExpiry()
        notifyTakeOver(of: displaced, by: requester)
        record(from: previous, reason: "lease", requester: requester, detail: "while its client runs" + (maximum.map { ", at most \($0)" } ?? ""))
        return (newLease.id, status())
    }

    /// The client of a client-bound lease closed its connection: bring the baseline back.
    /// Returns the new status, or `nil` if the lease had already ended.
    public func release(leaseID: UInt64) -> StatusResponse? {
        guard let current = lease, current.id == leaseID else { return nil }
        endLease(reason: "lease-released", detail: "client closed its connection")
        return status()
    }

    /// Re-reads the profile directories. The active condition changes only if its own file now
    /// says something else; a file that broke or vanished keeps the values in force.
    /// `requester` is who asked (`nil` for SIGHUP), so a re-applied condition is logged with them.
    public func reload(by requester: Requester? = nil) -> ReloadResponse {
        let fresh = ProfileCatalog.load(from: profileDirectories)
        for problem in fresh.problems {
            logger.warning("reload: skipping profile: \(problem)")
        }
        func refreshed(_ entry: CatalogEntry) -> CatalogEntry {
            guard let update = fresh.entries.first(where: { $0.file == entry.file }) else {
                logger.warning("reload: \(entry.file) no longer loads; '\(entry.profile.name)' keeps its values")
                return entry
            }
            return update
        }
        catalog = fresh
        let newBaseline = baseline.map(refreshed)
        var newLease = lease
        if let leased = newLease?.entry {
            newLease?.entry = refreshed(leased)
        }
        let before = effective
        var reapplied = false
        if newBaseline != baseline || newLease?.entry != lease?.entry {
            do {
                try converge(baseline: newBaseline, lease: newLease, replacingForeign: false)
                reapplied = before?.profile != effective?.profile
                if reapplied {
                    record(
                        from: before, reason: "reload", requester: requester,
                        detail: "\(effective?.file ?? "") changed" + (requester == nil ? " (SIGHUP)" : "")
                    )
                }
            } catch {
                logger.error("reload: cannot apply the new values of \(before?.profile.name ?? "the active profile"): \(error)")
            }
        }
        logger.notice("reloaded \(fresh.entries.count) profiles, \(fresh.problems.count) skipped\(reapplied ? ", active condition updated" : "")")
        return ReloadResponse(
            profiles: fresh.entries.count, problems: fresh.problems.map(ProfileProblem.init),
            reapplied: reapplied, status: status()
        )
    }

    /// Brings the kernel to what the state file says was wanted when the previous daemon ended:
    /// a lease still valid, else the baseline, else nothing. A complete tree is re-adopted
    /// (its values rewritten), anything partial is removed first.
    public func recover() throws(ShapingError) {
        let persisted = stateStore?.load().flatMap { $0.interface == target.interface ? $0 : nil }
        var storedLease: Lease?
        if let stored = persisted?.lease, let entry = stored.profile.entry {
            if stored.clientBound {
                logger.notice("startup: dropping the lease on '\(entry.profile.name)' held by \(stored.holder): its client's connection ended with the previous daemon")
            } else if let expires = stored.expires, expires <= Date() {
                logger.notice("startup: the lease on '\(entry.profile.name)' held by \(stored.holder) expired while no daemon ran")
            } else {
                storedLease = Lease(
                    id: nextLeaseID, entry: entry, holder: Requester(document: stored.holder),
                    since: stored.since, expires: stored.expires, clientBound: false
                )
                nextLeaseID += 1
            }
        }
        baseline = persisted?.baseline?.entry
        baselineSince = persisted?.baselineSince ?? Date()
        lease = storedLease

        let survey = try engine.survey(target)
        guard let wanted = effective else {
            if survey.hasLinkcondObjects {
                logger.notice("startup: removing the linkcond tree an earlier daemon left on \(target.interface); nothing was to stay in force")
                try engine.remove(target)
                record(from: nil, to: "off", reason: "startup", requester: nil, detail: "removed a tree left by an earlier daemon")
            }
            persist()
            return
        }
        let plan = planner.plan(wanted.profile, on: target)
        var adopted = false
        if survey.isCompleteTree {
            do {
                try engine.rewrite(plan)
                adopted = true
            } catch {
                logger.warning("startup: cannot re-adopt the tree on \(target.interface) (\(error.message)); rebuilding it")
            }
        }
        if !adopted {
            try engine.remove(target)
            try engine.apply(plan)
        }
        applied = Applied(entry: wanted, plan: plan)
        persist()
        scheduleExpiry()
        let how = adopted ? "re-adopted the tree an earlier daemon left" : "rebuilt it"
        logger.notice("startup: '\(wanted.profile.name)' stays in force on \(target.interface): \(how)")
        record(from: nil, to: wanted.profile.name, reason: "startup", requester: nil, detail: how)
    }

    /// Graceful stop: ends any lease, removes all shaping, forgets the state.
    public func shutdown() throws(ShapingError) {
        let previous = effective
        if let current = lease {
            current.timer?.cancel()
            lease = nil
            current.onEnd?(LeaseEvent(event: .ended, reason: .shutdown, status: offStatus()))
        }
        baseline = nil
        applied = nil
        try engine.remove(target)
        stateStore?.remove()
        if previous != nil {
            record(from: previous?.profile.name, to: "off", reason: "shutdown", requester: nil, detail: nil)
        }
    }

    // MARK: Leases

    private func checkNoLease(against requester: Requester, force: Bool) throws(LeaseConflictError) {
        guard let current = lease, !force else { return }
        throw LeaseConflictError(
            profile: current.entry.profile.name, holder: current.holder.document,
            secondsLeft: current.expires.map { Int($0.timeIntervalSinceNow.rounded(.up)) }
        )
    }

    /// Tells the client of a lease that `requester` forced its way past that it is over.
    private func notifyTakeOver(of displaced: Lease?, by requester: Requester) {
        guard let displaced, displaced.id != lease?.id else { return }
        logger.notice("lease on '\(displaced.entry.profile.name)' held by \(displaced.holder) taken over by \(requester)")
        displaced.onEnd?(LeaseEvent(event: .ended, reason: .takenOver, by: requester.document, status: status()))
    }

    private func makeLease(_ entry: CatalogEntry, holder: Requester, duration: LeaseDuration?, clientBound: Bool) -> Lease {
        defer { nextLeaseID += 1 }
        return Lease(
            id: nextLeaseID, entry: entry, holder: holder, since: Date(),
            expires: duration.map { Date().addingTimeInterval($0.seconds) }, clientBound: clientBound
        )
    }

    /// One timer for the current lease's end: no wakeups at all while there is no lease.
    private func scheduleExpiry() {
        guard let current = lease, let expires = current.expires, current.timer == nil else { return }
        let id = current.id
        let delay = TimeAmount.milliseconds(Int64((expires.timeIntervalSinceNow * 1000).rounded(.up)))
        lease?.timer = eventLoop.scheduleTask(in: max(delay, .zero)) {
            Task { await self.expire(leaseID: id) }
        }
    }

    private func expire(leaseID: UInt64) {
        guard let current = lease, current.id == leaseID else { return }
        endLease(reason: "lease-expired", detail: nil)
        current.onEnd?(LeaseEvent(event: .ended, reason: .expired, status: status()))
    }

    /// Ends the current lease and brings the baseline back. If the kernel refuses, the lease's
    /// condition stays in force without a lease, and the error is logged.
    private func endLease(reason: String, detail: String?) {
        guard let current = lease else { return }
        current.timer?.cancel()
        do {
            try converge(baseline: baseline, lease: nil, replacingForeign: false)
        } catch {
            logger.error("cannot end the lease on '\(current.entry.profile.name)': \(error); keeping it in force without a lease")
            baseline = current.entry
            lease = nil
            persist()
        }
        record(from: current.entry, reason: reason, requester: nil, detail: detail ?? "held by \(current.holder)")
    }

    // MARK: Applying

    /// Makes `(baseline, lease)` the wanted state and brings the kernel there: the state file is
    /// written first, so a daemon killed halfway is followed by one that knows the goal.
    private func converge(baseline newBaseline: CatalogEntry?, lease newLease: Lease?, replacingForeign: Bool) throws {
        let oldBaseline = baseline
        let oldLease = lease
        let wanted = newLease?.entry ?? newBaseline
        baseline = newBaseline
        lease = newLease
        persist()
        do {
            try transition(to: wanted, replacingForeign: replacingForeign)
        } catch {
            baseline = oldBaseline
            lease = oldLease
            persist()
            throw error
        }
        // Only now is the old lease really gone; after a failure it stays, timer and all.
        if oldLease?.id != newLease?.id {
            oldLease?.timer?.cancel()
        }
        if oldBaseline?.profile != newBaseline?.profile {
            baselineSince = Date()
        }
    }

    /// Brings the kernel from what it has to `wanted`: build, change in place, or remove.
    private func transition(to wanted: CatalogEntry?, replacingForeign: Bool) throws {
        guard let wanted else {
            if applied != nil {
                try engine.remove(target)
                applied = nil
            }
            return
        }
        let plan = planner.plan(wanted.profile, on: target)
        guard let current = applied else {
            try engine.apply(plan, replacingForeign: replacingForeign)
            applied = Applied(entry: wanted, plan: plan)
            return
        }
        do {
            try engine.change(from: current.plan, to: plan)
        } catch {
            guard try treeIsMissing(after: error) else { throw error }
            logger.warning("linkcond's tree on \(target.interface) was removed behind its back; rebuilding it")
            try engine.remove(target)
            try engine.apply(plan, replacingForeign: replacingForeign)
        }
        applied = Applied(entry: wanted, plan: plan)
    }

    /// Whether a failed switch failed because the tree to change is gone (deleted by hand, or
    /// the interface was recreated), which a rebuild can fix.
    private func treeIsMissing(after error: ShapingError) throws(ShapingError) -> Bool {
        guard error.netlink?.code == .notFound || error.netlink?.code == .noSuchDevice else { return false }
        return try !engine.survey(target).isCompleteTree
    }

    private func persist() {
        guard let stateStore else { return }
        let state = PersistedState(
            interface: target.interface,
            baseline: baseline.map(PersistedState.StoredProfile.init),
            baselineSince: baselineSince,
            lease: lease.map {
                PersistedState.StoredLease(
                    profile: PersistedState.StoredProfile($0.entry), holder: $0.holder.document,
                    since: $0.since, expires: $0.expires, clientBound: $0.clientBound
                )
            }
        )
        do {
            try stateStore.save(state)
        } catch {
            logger.error("cannot write \(stateStore.url.path): \(error); a restarted daemon may not restore this condition")
        }
    }

    // MARK: Documents and history

    private func document(_ lease: Lease) -> LeaseDocument {
        LeaseDocument(
            profile: lease.entry.profile.name,
            holder: lease.holder.document,
            kind: lease.clientBound ? .clientBound : .timed,
            expires: lease.expires?.formatted(.iso8601),
            secondsLeft: lease.expires.map { max(0, Int($0.timeIntervalSinceNow.rounded(.up))) },
            restores: baseline?.profile.name ?? "off"
        )
    }

    private func offStatus() -> StatusResponse {
        var status = status()
        status.active = false
        status.profile = nil
        status.lease = nil
        return status
    }

    private func record(from previous: CatalogEntry?, reason: String, requester: Requester?, detail: String?) {
        record(from: previous?.profile.name ?? "off", to: effective?.profile.name ?? "off", reason: reason, requester: requester, detail: detail)
    }

    private func record(from: String?, to: String, reason: String, requester: Requester?, detail: String?) {
        let from = from ?? "off"
        var line = "condition: \(from) -> \(to) on \(target.interface) (\(reason))"
        if let requester { line += " by \(requester)" }
        if let detail { line += "; \(detail)" }
        logger.notice("\(line)")
        history.record(HistoryEntryDocument(
            time: Date().formatted(.iso8601), from: from, to: to, reason: reason,
            requester: requester?.document, detail: detail
        ))
    }
}

/// A lease is held by someone else and the request did not ask to take over.
public struct LeaseConflictError: Error, Sendable, CustomStringConvertible {
    public var profile: String
    public var holder: HolderDocument
    public var secondsLeft: Int?

    public var description: String {
        var text = "'\(profile)' is held by \(holder)"
        if let secondsLeft { text += " for \(secondsLeft)s more" }
        return text + "; use --force to take over"
    }
}

extension Requester {
    init(document: HolderDocument) {
        self.init(uid: document.uid, gid: 0, pid: document.pid, user: document.user, command: document.command)
    }
}
