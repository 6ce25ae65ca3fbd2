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

/// The only path to change the condition: applies requests one after another, in the order of
/// `ConditionPolicy` (what should be in force), then the state journal (so that a daemon
/// killed halfway knows the goal), then `KernelConvergence` (the kernel), then the history.
public actor Conditioner {
    /// Runtime companions of the current lease: its expiry timer, and for a client-bound lease
    /// the way to tell its client that it ended.
    struct LeaseRuntime {
        var leaseID: UInt64
        var timer: Scheduled<Void>?
        var onEnd: (@Sendable (LeaseEvent) -> Void)?
    }

    public nonisolated let target: ShapingTarget
    let convergence: KernelConvergence
    private let eventLoop: any EventLoop
    private let stateStore: StateStore?
    let logger: Logger
    private let profileDirectories: [String]
    var catalog: ProfileCatalog
    var history: ConditionHistory
    var policy = ConditionPolicy()
    private var leaseRuntime: LeaseRuntime?
    /// Set by `shutdown`: no change is taken after it.
    private var stopping = false

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
        self.target = target
        self.convergence = KernelConvergence(target: target, planner: planner, engine: engine, logger: logger)
        self.catalog = catalog
        self.profileDirectories = profileDirectories
        self.eventLoop = eventLoop
        self.stateStore = stateDirectory.map { StateStore(directory: $0, interface: target.interface) }
        self.history = ConditionHistory(file: historyFile.map { URL(fileURLWithPath: $0) })
        self.logger = logger
    }

    // MARK: Changing

    /// Puts the interface into the named profile's condition, for good or, with `duration`, as a
    /// lease that reverts by itself.
    ///
    /// From off, the tree is built; from another profile, its values are changed in place. On
    /// any failure the previous condition stays in force and the error says why. A lease held
    /// by someone else is a conflict unless `force`.
    public func activate(
        _ choice: ProfileChoice, by requester: Requester, for duration: LeaseDuration? = nil,
        force: Bool = false, replacingForeign: Bool = false
    ) throws -> StatusResponse {
        try checkRunning()
        let entry = try resolve(choice)
        try policy.checkNoLease(against: requester, force: force)
        let previous = policy.effective
        let displaced: LeaseRuntime?
        if let duration {
            let lease = policy.makeLease(entry, holder: requester, duration: duration, clientBound: false)
            displaced = try converge(to: policy.wanting(baseline: policy.baseline, lease: lease), replacingForeign: replacingForeign)
            record(from: previous, reason: "lease", requester: requester, detail: "for \(duration)")
        } else {
            displaced = try converge(to: policy.wanting(baseline: entry, lease: nil), replacingForeign: replacingForeign)
            record(from: previous, reason: "activate", requester: requester, detail: nil)
        }
        notifyTakeOver(displaced, by: requester)
        return status()
    }

    /// Removes all shaping. Also cleans up after an earlier run when already off.
    public func deactivate(by requester: Requester, force: Bool = false) throws -> StatusResponse {
        try checkRunning()
        try policy.checkNoLease(against: requester, force: force)
        let previous = policy.effective
        let displaced = try converge(to: policy.wanting(baseline: nil, lease: nil), replacingForeign: false)
        if previous == nil {
            // Already off: still remove whatever an earlier daemon may have left.
            try convergence.removeAll()
        } else {
            record(from: previous, reason: "off", requester: requester, detail: nil)
        }
        notifyTakeOver(displaced, by: requester)
        return status()
    }

    /// A lease that lasts while the client's connection stays open (`linkcond run`), at most
    /// `maximum`. `onEnd` hears about an end the client did not cause: expiry, take-over, shutdown.
    public func hold(
        _ choice: ProfileChoice, by requester: Requester, maximum: LeaseDuration?, force: Bool = false,
        replacingForeign: Bool = false, onEnd: @escaping @Sendable (LeaseEvent) -> Void
    ) throws -> (leaseID: UInt64, status: StatusResponse) {
        try checkRunning()
        let entry = try resolve(choice)
        try policy.checkNoLease(against: requester, force: force)
        let previous = policy.effective
        let lease = policy.makeLease(entry, holder: requester, duration: maximum, clientBound: true)
        let displaced = try converge(to: policy.wanting(baseline: policy.baseline, lease: lease), replacingForeign: replacingForeign, onEnd: onEnd)
        notifyTakeOver(displaced, by: requester)
        record(from: previous, reason: "lease", requester: requester, detail: "while its client runs" + (maximum.map { ", at most \($0)" } ?? ""))
        return (lease.id, status())
    }

    /// The client of a client-bound lease closed its connection: bring the baseline back.
    /// Returns the new status, or `nil` if the lease had already ended.
    public func release(leaseID: UInt64) -> StatusResponse? {
        guard let lease = policy.lease, lease.id == leaseID else { return nil }
        endLease(reason: "lease-released", detail: "client closed its connection")
        return status()
    }

    /// `linkcond release`: the holder ends their own lease early and gets the baseline back.
    public func releaseLease(by requester: Requester) throws -> StatusResponse {
        try checkRunning()
        guard let lease = policy.lease, lease.isHeld(by: requester) else {
            throw NoLeaseError(holder: policy.lease?.holder.document)
        }
        let previous = policy.effective
        let ended = try converge(to: policy.wanting(baseline: policy.baseline, lease: nil), replacingForeign: false)
        record(from: previous, reason: "lease-released", requester: requester, detail: "ended early by its holder (\(lease.entry.profile.name))")
        ended?.onEnd?(LeaseEvent(event: .ended, reason: .released, status: status()))
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
            guard !entry.isAdHoc else { return entry }
            guard let update = fresh.entries.first(where: { $0.file == entry.file }) else {
                logger.warning("reload: \(entry.file) no longer loads; '\(entry.profile.name)' keeps its values")
                return entry
            }
            return update
        }
        catalog = fresh
        var wanted = policy.wanting(baseline: policy.baseline.map(refreshed), lease: policy.lease)
        if let lease = policy.lease {
            wanted.lease?.entry = refreshed(lease.entry)
        }
        let before = policy.effective
        var reapplied = false
        if !stopping, wanted != policy {
            do {
                try converge(to: wanted, replacingForeign: false)
                reapplied = before?.profile != policy.effective?.profile
                if reapplied {
                    record(
                        from: before, reason: "reload", requester: requester,
                        detail: "\(policy.effective?.file ?? "") changed" + (requester == nil ? " (SIGHUP)" : "")
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
    /// a lease still valid, else the baseline, else nothing. A tree that is exactly the wanted
    /// one is re-adopted (its values rewritten); anything less is rebuilt or removed.
    public func recover() throws(ShapingError) {
        policy = recoveredPolicy(from: stateStore?.load())
        persist()
        let wanted = policy.effective
        let outcome = try convergence.recover(to: wanted?.profile)
        switch outcome {
        case .nothingToDo:
            break
        case .removedLeftovers:
            logger.notice("startup: removed the linkcond tree an earlier daemon left on \(target.interface); nothing was to stay in force")
            record(from: nil, to: "off", reason: "startup", requester: nil, detail: "removed a tree left by an earlier daemon")
        case .readopted, .rebuilt:
            var how = "re-adopted the tree an earlier daemon left"
            if case .rebuilt(let deviations) = outcome {
                how = deviations.isEmpty ? "built it" : "rebuilt it: the tree left was incomplete"
                for deviation in deviations.prefix(20) {
                    logger.notice("startup: the tree on \(target.interface) differed: \(deviation)")
                }
            }
            logger.notice("startup: '\(wanted?.profile.name ?? "")' stays in force on \(target.interface): \(how)")
            record(from: nil, to: wanted?.profile.name ?? "off", reason: "startup", requester: nil, detail: how)
            scheduleExpiry()
        }
    }

    /// Graceful stop: ends any lease (telling a waiting client why), removes all shaping,
    /// forgets the state. After it, every change is refused.
    public func shutdown() throws(ShapingError) {
        stopping = true
        let previous = policy.effective
        let lease = policy.lease
        let runtime = leaseRuntime
        runtime?.timer?.cancel()
        leaseRuntime = nil
        policy = policy.wanting(baseline: nil, lease: nil)
        try convergence.removeAll()
        stateStore?.remove()
        runtime?.onEnd?(LeaseEvent(event: .ended, reason: .shutdown, status: status()))
        if previous != nil {
            let detail = lease.map { "ended the lease on '\($0.entry.profile.name)' held by \($0.holder)" }
            record(from: previous?.profile.name, to: "off", reason: "shutdown", requester: nil, detail: detail)
        }
    }

    // MARK: Leases

    private func resolve(_ choice: ProfileChoice) throws(UnknownProfileError) -> CatalogEntry {
        switch choice {
        case .named(let name): return try catalog.entry(named: name)
        case .defined(let entry): return entry
        }
    }

    private func checkRunning() throws(DaemonStoppingError) {
        if stopping { throw DaemonStoppingError() }
    }

    /// The policy a restarted daemon starts from: the stored one, less a lease that ended
    /// while no daemon ran (expired, or bound to a client whose connection died with it).
    private func recoveredPolicy(from state: PersistedState?) -> ConditionPolicy {
        guard let state, state.interface == target.interface else { return ConditionPolicy() }
        let baseline: CatalogEntry?
        do {
            baseline = try state.baseline?.entry()
        } catch {
            logger.error("startup: ignoring the stored condition: \(error)")
            return ConditionPolicy()
        }
        var lease: Lease?
        if let stored = state.lease, let entry = try? stored.profile.entry() {
            if stored.clientBound {
                logger.notice("startup: dropping the lease on '\(entry.profile.name)' held by \(stored.holder): its client's connection ended with the previous daemon")
            } else if let expires = stored.expires, expires <= Date() {
                logger.notice("startup: the lease on '\(entry.profile.name)' held by \(stored.holder) expired while no daemon ran")
            } else {
                lease = Lease(id: 1, entry: entry, holder: Requester(document: stored.holder), since: stored.since, expires: stored.expires, clientBound: false)
            }
        }
        return ConditionPolicy(baseline: baseline, baselineSince: state.baselineSince, lease: lease)
    }

    /// Tells the client of a lease that `requester` forced its way past that it is over.
    private func notifyTakeOver(_ displaced: LeaseRuntime?, by requester: Requester) {
        guard let displaced else { return }
        logger.notice("lease \(displaced.leaseID) taken over by \(requester)")
        displaced.onEnd?(LeaseEvent(event: .ended, reason: .takenOver, by: requester.document, status: status()))
    }

    /// One timer for the current lease's end: no wakeups at all while there is no lease.
    private func scheduleExpiry(onEnd: (@Sendable (LeaseEvent) -> Void)? = nil) {
        guard let lease = policy.lease, leaseRuntime?.leaseID != lease.id else { return }
        var runtime = LeaseRuntime(leaseID: lease.id, onEnd: onEnd)
        if let expires = lease.expires {
            let id = lease.id
            let delay = TimeAmount.milliseconds(Int64((expires.timeIntervalSinceNow * 1000).rounded(.up)))
            runtime.timer = eventLoop.scheduleTask(in: max(delay, .zero)) {
                Task { await self.expire(leaseID: id) }
            }
        }
        leaseRuntime = runtime
    }

    private func expire(leaseID: UInt64) {
        guard let lease = policy.lease, lease.id == leaseID else { return }
        let ended = endLease(reason: "lease-expired", detail: nil)
        ended?.onEnd?(LeaseEvent(event: .ended, reason: .expired, status: status()))
    }

    /// Ends the current lease and brings the baseline back; returns the ended lease's runtime.
    /// If the kernel refuses, the lease's condition stays in force as the baseline, and the
    /// error is logged.
    @discardableResult
    private func endLease(reason: String, detail: String?) -> LeaseRuntime? {
        guard let lease = policy.lease else { return nil }
        var ended: LeaseRuntime?
        do {
            ended = try converge(to: policy.wanting(baseline: policy.baseline, lease: nil), replacingForeign: false)
        } catch {
            logger.error("cannot end the lease on '\(lease.entry.profile.name)': \(error); keeping it in force without a lease")
            policy = policy.wanting(baseline: lease.entry, lease: nil)
            persist()
            ended = leaseRuntime
            ended?.timer?.cancel()
            leaseRuntime = nil
        }
        record(from: lease.entry, reason: reason, requester: nil, detail: detail ?? "held by \(lease.holder)")
        return ended
    }

    // MARK: Applying

    /// Makes `wanted` the policy and brings the kernel there. The state file is written first,
    /// so a daemon killed halfway is followed by one that knows the goal; on failure the old
    /// policy comes back, in memory and on disk, and the kernel is as it was.
    ///
    /// Returns the runtime of a lease this change ended (timer cancelled), so that the caller
    /// can tell its client why.
    @discardableResult
    private func converge(
        to wanted: ConditionPolicy, replacingForeign: Bool, onEnd: (@Sendable (LeaseEvent) -> Void)? = nil
    ) throws -> LeaseRuntime? {
        let old = policy
        policy = wanted
        persist()
        do {
            try convergence.converge(to: wanted.effective?.profile, replacingForeign: replacingForeign)
        } catch {
            policy = old
            persist()
            throw error
        }
        // Only now is an old lease really gone; after a failure it stays, timer and all.
        var ended: LeaseRuntime?
        if let runtime = leaseRuntime, runtime.leaseID != wanted.lease?.id {
            runtime.timer?.cancel()
            leaseRuntime = nil
            ended = runtime
        }
        scheduleExpiry(onEnd: onEnd)
        return ended
    }

    func persist() {
        guard let stateStore else { return }
        let state = PersistedState(
            interface: target.interface,
            baseline: policy.baseline.map(PersistedState.StoredProfile.init),
            baselineSince: policy.baselineSince,
            lease: policy.lease.map {
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
}

extension Requester {
    init(document: HolderDocument) {
        self.init(uid: document.uid, gid: 0, pid: document.pid, user: document.user, command: document.command)
    }
}
