#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import IPAddressText
import LinkCondVocabulary
import Failures
import Logging
import Netlink
import NIOCore
import Profiles
import Sandboxes
import Shaping

/// The only path to change a condition: applies requests one after another, in the order of
/// `ConditionPolicy` (what should be in force), then the state journal (so that a daemon
/// killed halfway knows the goal), then `KernelConvergence` (the kernel), then the history.
///
/// It holds any number of conditions, one per interface: the default one on the daemon's own
/// interface, which always exists, and others, in the daemon's network namespace or in another
/// (a container's), that exist while they have a profile or a lease.
/// A `ConditionID` of `nil` means the default condition.
public actor Conditioner {
    static let loopback = "lo"

    public nonisolated let target: ShapingTarget
    nonisolated let defaultID: ConditionID
    let factory: ConditionFactory
    var namespaces: NamespaceDirectory { factory.namespaces }
    let sandboxManager: SandboxManager
    /// Resets connections in a target's namespace; `nil`: resets are refused.
    let resetter: (any ConnectionResetter)?
    let planner: Planner
    package let eventLoop: any EventLoop
    let stateDirectory: String?
    let clock: WallClock
    let logger: Logger
    private let profileDirectories: [String]
    /// The directory profiles are saved in, and which profiles are read-only.
    public nonisolated let profileFiles: ProfileFiles
    var catalog: ProfileCatalog
    /// Beside each profile directory, its `scenarios` twin.
    private let scenarioDirectories: [String]
    var scenarioCatalog: ScenarioCatalog
    var history: ConditionHistory
    var registry: ConditionRegistry
    var lastLeaseID: UInt64 = 0
    /// Waiting for a condition in another namespace: the watch over namespaces, which keeps no
    /// timer while there is none.
    var namespaceWaiters: [CheckedContinuation<Void, Never>] = []
    /// Numbers the timelines of scenarios and traces, so that a timer of one that ended does nothing.
    var lastGeneration: UInt64 = 0
    /// Packet captures running, each told of its condition's changes as they are recorded.
    var captures: [UInt64: CaptureListener] = [:]
    var lastCaptureSerial: UInt64 = 0
    /// Set by `shutdown`: no change is taken after it.
    var stopping = false

    public init(
        engine: sending ShapingEngine,
        target: ShapingTarget,
        planner: Planner,
        catalog: ProfileCatalog,
        profileDirectories: [String] = [],
        profileFiles: ProfileFiles = ProfileFiles(directory: nil),
        scenarios: ScenarioCatalog = ScenarioCatalog(),
        scenarioDirectories: [String] = [],
        eventLoop: any EventLoop,
        stateDirectory: String? = nil,
        historyFile: String? = nil,
        namespaces: sending (any NamespaceKernels)? = nil,
        sandboxes: sending (any SandboxPlumbing)? = nil,
        resetter: sending (any ConnectionResetter)? = nil,
        clock: WallClock = .system,
        logger: Logger
    ) {
        let defaultID = ConditionID(interface: target.interface)
        let convergence = KernelConvergence(target: target, planner: planner, engine: engine, logger: logger)
        self.registry = ConditionRegistry(default: Condition(
            id: defaultID, convergence: convergence, stateStore: stateDirectory.map { StateStore(directory: $0, condition: defaultID) },
            offSince: clock.now()
        ))
        self.target = target
        self.sandboxManager = SandboxManager(plumbing: sandboxes, logger: logger)
        self.resetter = resetter
        self.defaultID = defaultID
        self.factory = ConditionFactory(
            engine: engine, planner: planner, namespaces: NamespaceDirectory(kernels: namespaces, logger: logger),
            stateDirectory: stateDirectory, logger: logger
        )
        self.planner = planner
        self.catalog = catalog
        self.profileDirectories = profileDirectories
        self.profileFiles = profileFiles
        self.scenarioCatalog = scenarios
        self.scenarioDirectories = scenarioDirectories
        self.eventLoop = eventLoop
        self.clock = clock
        self.stateDirectory = stateDirectory
        self.history = ConditionHistory(file: historyFile.map { URL(fileURLWithPath: $0) })
        self.logger = logger
    }

    /// The time of day, as the leases' clock has it.
    var now: Date { clock.now() }

    /// The time timers are set by, as the event loop counts it (a test's loop keeps its own).
    var monotonicNow: NIODeadline { eventLoop.now }

    // MARK: Changing

    /// Puts a condition's interface into the named profile's condition, for good or, with
    /// `duration`, as a lease that reverts by itself.
    ///
    /// From off, the tree is built; from another profile, its values are changed in place. On
    /// any failure the previous condition stays in force and the error says why. A lease held
    /// by someone else is a conflict unless `force`.
    ///
    /// For a peer named by a host name, `hostAddresses` are what it resolved to, which a new
    /// condition matches for as long as it lasts (an existing one keeps its own).
    public func activate(
        _ choice: ProfileChoice, on id: ConditionID? = nil, by requester: Requester, for duration: LeaseDuration? = nil,
        force: Bool = false, replacingForeign: Bool = false, hostAddresses: [[UInt8]] = []
    ) throws(ConditionsRefusal) -> ConditionSnapshot {
        try checkRunning()
        let (entry, scenario) = try resolve(choice)
        var condition = try self.condition(id, hostAddresses: hostAddresses)
        defer { settle(condition) }
        try refusing { () throws(HostNameError) in try condition.checkHostAddresses() }
        try refusing { () throws(LeaseConflictError) in try condition.policy.checkNoLease(against: requester, force: force, now: now) }
        let previous = condition.policy.effective
        let displaced: Condition.LeaseRuntime?
        let playing = scenario.map { "'\($0.entry.scenario.name)' step 1 (\($0.entry.scenario.steps[0].displayName))" }
        let applied: NIODeadline
        if let duration {
            let lease = condition.policy.makeLease(id: nextLeaseID(), entry, holder: requester, duration: duration, clientBound: false, now: now)
            let wanted = condition.policy.wanting(baseline: condition.policy.baseline, lease: lease, now: now)
            displaced = try refusing { () throws(ShapingError) in try converge(&condition, to: wanted, replacingForeign: replacingForeign) }
            applied = monotonicNow
            record(condition, from: previous, reason: "lease", requester: requester, detail: (playing.map { "plays \($0) " } ?? "") + "for \(duration)")
        } else {
            let wanted = condition.policy.wanting(baseline: entry, lease: nil, now: now)
            displaced = try refusing { () throws(ShapingError) in try converge(&condition, to: wanted, replacingForeign: replacingForeign) }
            applied = monotonicNow
            record(condition, from: previous, reason: scenario == nil ? "activate" : "play", requester: requester, detail: playing)
        }
        if let scenario { beginScenario(scenario, on: &condition, appliedAt: applied) }
        notifyTakeOver(displaced, on: condition, by: requester)
        return snapshot(of: condition)
    }

    /// Removes a condition's shaping. Also cleans up after an earlier run when already off.
    public func deactivate(on id: ConditionID? = nil, by requester: Requester, force: Bool = false) throws(ConditionsRefusal) -> ConditionSnapshot {
        try checkRunning()
        var condition = try self.condition(id)
        defer { settle(condition) }
        try refusing { () throws(LeaseConflictError) in try condition.policy.checkNoLease(against: requester, force: force, now: now) }
        try refusing { () throws(ShapingError) in try switchOff(&condition, by: requester) }
        return snapshot(of: condition)
    }

    /// Switches every condition off. A lease held on any of them refuses the whole request
    /// unless `force`, before anything changes; a kernel refusal on one does not stop the others.
    public func deactivateAll(by requester: Requester, force: Bool = false) throws(ConditionsRefusal) -> [ConditionSnapshot] {
        try checkRunning()
        for condition in orderedConditions {
            try refusing { () throws(LeaseConflictError) in try condition.policy.checkNoLease(against: requester, force: force, now: now) }
        }
        var failure: ShapingError?
        for var condition in orderedConditions {
            do {
                try switchOff(&condition, by: requester)
            } catch {
                logger.error("off on \(condition.id): \(error)")
                failure = failure ?? error
            }
            settle(condition)
        }
        if let failure { throw ConditionsRefusal(failure) }
        return conditionList()
    }

    /// Re-reads the profile directories. A condition changes only if its own file now says
    /// something else; a file that broke or vanished keeps the values in force.
    /// `requester` is who asked (`nil` for SIGHUP), so a re-applied condition is logged with them.
    public func reload(by requester: Requester? = nil) -> ReloadOutcome {
        let fresh = ProfileCatalog.load(from: profileDirectories)
        for problem in fresh.problems {
            logger.warning("reload: skipping profile: \(problem)")
        }
        catalog = fresh
        scenarioCatalog = ScenarioCatalog.load(from: scenarioDirectories, profiles: fresh)
        for problem in scenarioCatalog.problems {
            logger.warning("reload: skipping scenario: \(problem)")
        }
        var reappliedAny = false
        for var condition in orderedConditions where !stopping {
            reappliedAny = refresh(&condition, from: fresh, by: requester) || reappliedAny
            settle(condition)
        }
        logger.notice("reloaded \(fresh.entries.count) profiles, \(fresh.problems.count) skipped\(reappliedAny ? ", active condition updated" : "")")
        return ReloadOutcome(
            profiles: fresh.entries.count, problems: fresh.problems, reapplied: reappliedAny, condition: snapshot(of: defaultCondition)
        )
    }

    // MARK: Conditions

    var defaultCondition: Condition { registry.defaultCondition }

    /// The default condition first, then the others by id.
    var orderedConditions: [Condition] { registry.ordered }

    /// The condition `id` names (the default one for `nil`), made when it does not exist yet and
    /// its interface does. Made for a peer named by a host name, it needs the name's addresses.
    func condition(_ id: ConditionID?, hostAddresses: [[UInt8]] = []) throws(ConditionsRefusal) -> Condition {
        let id = try resolved(id)
        if let existing = registry[id] { return existing }
        guard !registry.isFull else {
            throw ConditionsRefusal(TooManyConditionsError(limit: ConditionRegistry.maximumCount))
        }
        guard id.interface != Self.loopback || id.peer?.namesServerPort == true else {
            throw ConditionsRefusal(LoopbackConditionError(requested: id))
        }
        let condition = try factory.makeAbsent(id, hostAddresses: hostAddresses, beside: registry, now: now)
        insert(condition)
        return condition
    }

    /// Whether the condition `id` names is held, with its match: one for a host name has its
    /// addresses already, and takes no others.
    public func holds(_ id: ConditionID?) -> Bool {
        (try? resolved(id)).map { registry[$0] != nil } ?? false
    }

    /// Makes `condition` one of the set, and its tree the one its target's other conditions share.
    package func insert(_ condition: Condition) {
        registry.insert(condition)
        if condition.id.namespace != nil {
            resumeNamespaceWaiters()
        }
    }

    /// Ends a change of `condition`: the registry takes its new value. A condition other than
    /// the default one ends with its last profile and lease: it leaves the set, and its state
    /// file goes (after its kernel objects, so a crash in between still leaves the file that
    /// tells the next daemon to remove them).
    func settle(_ condition: Condition) {
        guard condition.isIdle else { return registry.update(condition) }
        guard registry.remove(condition) else { return registry.update(condition) }
        endDeviceFlows(of: condition)
        // A sandbox that could not be removed keeps its state file: the next daemon tries again.
        let sandboxRemoved = tearDownSandbox(of: condition)
        if condition.sandbox != nil {
            restoreForwardingIfNoSandbox()
        }
        if sandboxRemoved {
            condition.stateStore?.remove()
        }
    }

    // MARK: Leases

    /// The profile a choice puts in force first; for a scenario, its first step's, with the rest.
    func resolve(_ choice: ProfileChoice) throws(ConditionsRefusal) -> (ProfileEntry, ScenarioStart?) {
        switch choice {
        case .named(let name): return (try refusing { () throws(UnknownNameError<Profile>) in try catalog.entry(named: name) }, nil)
        case .defined(let entry): return (entry, nil)
        case .scenario(let name):
            let start = try ScenarioStart(named: name, in: scenarioCatalog, profiles: catalog)
            return (start.profile, start)
        }
    }

    func checkRunning() throws(ConditionsRefusal) {
        if stopping { throw ConditionsRefusal(DaemonStoppingError()) }
    }

    /// Off, recorded; an idle condition is still swept of what an earlier daemon may have left.
    private func switchOff(_ condition: inout Condition, by requester: Requester) throws(ShapingError) {
        let previous = condition.policy.effective
        let displaced = try converge(&condition, to: condition.policy.wanting(baseline: nil, lease: nil, now: now), replacingForeign: false)
        if previous == nil {
            if !condition.convergence.isInUse {
                try condition.convergence.removeAll()
            }
        } else {
            record(condition, from: previous, reason: "off", requester: requester, detail: nil)
        }
        notifyTakeOver(displaced, on: condition, by: requester)
    }

    /// A condition's profiles as `fresh` has them now; whether the values in force changed.
    private func refresh(_ condition: inout Condition, from fresh: ProfileCatalog, by requester: Requester?) -> Bool {
        let policy = condition.policy
        let wanted = policy.refreshed(from: fresh, now: now, logger: logger)
        guard wanted != policy else { return false }
        let before = policy.effective
        do {
            try converge(&condition, to: wanted, replacingForeign: false, keepingScenario: true)
        } catch {
            logger.error("reload: cannot apply the new values of \(before?.profile.name ?? "the active profile") on \(condition.id): \(error)")
            return false
        }
        guard before?.profile != condition.policy.effective?.profile else { return false }
        record(
            condition, from: before, reason: "reload", requester: requester,
            detail: "\(condition.policy.effective?.file ?? "") changed" + (requester == nil ? " (SIGHUP)" : "")
        )
        return true
    }

    // MARK: Applying

    /// Makes `wanted` the condition's policy and brings its kernel objects there. The state
    /// file is written first, so a daemon killed halfway is followed by one that knows the
    /// goal; on failure the old policy comes back, in memory and on disk, and the kernel is as
    /// it was.
    ///
    /// Returns the runtime of a lease this change ended (timer cancelled), so that the caller
    /// can tell its client why. Any change but a scenario's own step (or a reload's new
    /// values) ends the scenario playing on the condition.
    @discardableResult
    func converge(
        _ condition: inout Condition, to wanted: ConditionPolicy, replacingForeign: Bool, keepingScenario: Bool = false,
        onEnd: (@Sendable (LeaseEnd) -> Void)? = nil
    ) throws(ShapingError) -> Condition.LeaseRuntime? {
        let old = condition.policy
        condition.policy = wanted
        persist(condition)
        do {
            try condition.converge(to: condition.paced(wanted.effective?.profile, at: monotonicNow), replacingForeign: replacingForeign)
        } catch {
            condition.policy = old
            persist(condition)
            throw error
        }
        // A link that goes down leaves connections to stall and retry, as on a real one.
        if let failure = wanted.effective?.profile.failure, failure.hasRules, failure != old.effective?.profile.failure {
            resetAsFailureBegins(condition, failure)
        }
        followTraces(&condition)
        if !keepingScenario {
            endScenario(&condition)
        }
        // Only now is an old lease really gone; after a failure it stays, timer and all.
        var ended: Condition.LeaseRuntime?
        if let runtime = condition.leaseRuntime, runtime.leaseID != wanted.lease?.id {
            runtime.timer?.cancel()
            condition.leaseRuntime = nil
            ended = runtime
        }
        scheduleExpiry(&condition, onEnd: onEnd)
        return ended
    }

    func persist(_ condition: Condition) {
        guard let stateStore = condition.stateStore else { return }
        let state = PersistedState(condition)
        do {
            try stateStore.save(state)
        } catch {
            logger.error("cannot write \(stateStore.url.path): \(error); a restarted daemon may not restore this condition")
        }
    }
}

/// Names a lease across the daemon: which condition, which lease on it.
public struct LeaseTicket: Sendable, Equatable {
    public var condition: ConditionID
    public var leaseID: UInt64
}

extension Requester {
    init(holder: Holder) {
        self.init(uid: holder.uid, gid: 0, pid: holder.pid, user: holder.user, command: holder.command)
    }
}
