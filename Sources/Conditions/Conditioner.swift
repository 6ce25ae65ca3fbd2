import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HostFacts
import IPAddressText
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
    /// The most conditions held at once; more is refused, never queued.
    static let maximumConditions = 1024
    static let loopback = "lo"
    /// The daemon's own network namespace, which a condition id names by the interface alone.
    static let ownNamespacePath = "/proc/self/ns/net"

    public nonisolated let target: ShapingTarget
    nonisolated let defaultID: ConditionID
    private let engine: ShapingEngine
    /// The way into other network namespaces; `nil`: conditions there are refused.
    private let namespaces: (any NamespaceKernels)?
    /// Joins `run --isolated` namespaces to the host; `nil`: sandboxes are refused.
    let sandboxes: (any SandboxPlumbing)?
    let planner: Planner
    package let eventLoop: any EventLoop
    private let stateDirectory: String?
    let clock: WallClock
    let logger: Logger
    private let profileDirectories: [String]
    var catalog: ProfileCatalog
    /// Beside each profile directory, its `scenarios` twin.
    private let scenarioDirectories: [String]
    var scenarioCatalog: ScenarioCatalog
    var history: ConditionHistory
    private(set) var conditions: [ConditionID: Condition]
    /// One tree per target, shared by the conditions on it; keyed by the whole interface's id.
    private var targets: [ConditionID: KernelConvergence]
    private var lastLeaseID: UInt64 = 0
    /// Waiting for a condition in another namespace: the watch over namespaces, which keeps no
    /// timer while there is none.
    private var namespaceWaiters: [CheckedContinuation<Void, Never>] = []
    /// Numbers trace playbacks, so that a timer of one that ended does nothing.
    var traceGenerations: UInt64 = 0
    /// Set by `shutdown`: no change is taken after it.
    private(set) var stopping = false

    public init(
        engine: sending ShapingEngine,
        target: ShapingTarget,
        planner: Planner,
        catalog: ProfileCatalog,
        profileDirectories: [String] = [],
        scenarios: ScenarioCatalog = ScenarioCatalog(),
        scenarioDirectories: [String] = [],
        eventLoop: any EventLoop,
        stateDirectory: String? = nil,
        historyFile: String? = nil,
        namespaces: sending (any NamespaceKernels)? = nil,
        sandboxes: sending (any SandboxPlumbing)? = nil,
        clock: WallClock = .system,
        logger: Logger
    ) {
        let defaultID = ConditionID(interface: target.interface)
        let convergence = KernelConvergence(target: target, planner: planner, engine: engine, logger: logger)
        self.targets = [defaultID: convergence]
        self.conditions = [
            defaultID: Condition(
                id: defaultID, convergence: convergence, stateStore: stateDirectory.map { StateStore(directory: $0, condition: defaultID) },
                offSince: clock.now()
            ),
        ]
        self.target = target
        self.namespaces = namespaces
        self.sandboxes = sandboxes
        self.defaultID = defaultID
        self.engine = engine
        self.planner = planner
        self.catalog = catalog
        self.profileDirectories = profileDirectories
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
    ) throws -> StatusResponse {
        try checkRunning()
        let (entry, scenario) = try resolve(choice)
        let condition = try self.condition(id, hostAddresses: hostAddresses)
        defer { dropIfIdle(condition) }
        try condition.checkHostAddresses()
        try condition.policy.checkNoLease(against: requester, force: force, now: now)
        let previous = condition.policy.effective
        let displaced: Condition.LeaseRuntime?
        let playing = scenario.map { "'\($0.entry.scenario.name)' step 1 (\($0.entry.scenario.steps[0].displayName))" }
        let applied: NIODeadline
        if let duration {
            let lease = condition.policy.makeLease(id: nextLeaseID(), entry, holder: requester, duration: duration, clientBound: false, now: now)
            displaced = try converge(condition, to: condition.policy.wanting(baseline: condition.policy.baseline, lease: lease, now: now), replacingForeign: replacingForeign)
            applied = .now()
            record(condition, from: previous, reason: "lease", requester: requester, detail: (playing.map { "plays \($0) " } ?? "") + "for \(duration)")
        } else {
            displaced = try converge(condition, to: condition.policy.wanting(baseline: entry, lease: nil, now: now), replacingForeign: replacingForeign)
            applied = .now()
            record(condition, from: previous, reason: scenario == nil ? "activate" : "play", requester: requester, detail: playing)
        }
        if let scenario { beginScenario(scenario, on: condition, appliedAt: applied) }
        notifyTakeOver(displaced, on: condition, by: requester)
        return status(of: condition)
    }

    /// Removes a condition's shaping. Also cleans up after an earlier run when already off.
    public func deactivate(on id: ConditionID? = nil, by requester: Requester, force: Bool = false) throws -> StatusResponse {
        try checkRunning()
        let condition = try self.condition(id)
        defer { dropIfIdle(condition) }
        try condition.policy.checkNoLease(against: requester, force: force, now: now)
        try switchOff(condition, by: requester)
        return status(of: condition)
    }

    /// Switches every condition off. A lease held on any of them refuses the whole request
    /// unless `force`, before anything changes; a kernel refusal on one does not stop the others.
    public func deactivateAll(by requester: Requester, force: Bool = false) throws -> ConditionListResponse {
        try checkRunning()
        for condition in orderedConditions {
            try condition.policy.checkNoLease(against: requester, force: force, now: now)
        }
        var failure: (any Error)?
        for condition in orderedConditions {
            do {
                try switchOff(condition, by: requester)
            } catch {
                logger.error("off on \(condition.id): \(error)")
                failure = failure ?? error
            }
            dropIfIdle(condition)
        }
        if let failure { throw failure }
        return conditionList()
    }

    /// A lease that lasts while the client's connection stays open (`linkcond run`), at most
    /// `maximum`. `onEnd` hears about an end the client did not cause: expiry, take-over, shutdown.
    ///
    /// With `sandbox`, `id` is `pid/PID/eth0` and PID's network namespace a fresh one, which
    /// is joined to the host first; the sandbox ends with the lease.
    public func hold(
        _ choice: ProfileChoice, on id: ConditionID? = nil, by requester: Requester, maximum: LeaseDuration?, force: Bool = false,
        replacingForeign: Bool = false, sandbox: Bool = false, hostAddresses: [[UInt8]] = [],
        onEnd: @escaping @Sendable (LeaseEvent) -> Void
    ) throws -> (lease: LeaseTicket, status: StatusResponse) {
        try checkRunning()
        let (entry, scenario) = try resolve(choice)
        let condition = try sandbox ? makeSandbox(try resolved(id), for: requester) : self.condition(id, hostAddresses: hostAddresses)
        defer { dropIfIdle(condition) }
        try condition.checkHostAddresses()
        try condition.policy.checkNoLease(against: requester, force: force, now: now)
        let previous = condition.policy.effective
        let lease = condition.policy.makeLease(id: nextLeaseID(), entry, holder: requester, duration: maximum, clientBound: true, now: now)
        let displaced = try converge(
            condition, to: condition.policy.wanting(baseline: condition.policy.baseline, lease: lease, now: now),
            replacingForeign: replacingForeign, onEnd: onEnd
        )
        if let scenario { beginScenario(scenario, on: condition, appliedAt: .now()) }
        notifyTakeOver(displaced, on: condition, by: requester)
        let playing = scenario.map { "plays '\($0.entry.scenario.name)' " } ?? ""
        record(condition, from: previous, reason: "lease", requester: requester, detail: playing + "while its client runs" + (maximum.map { ", at most \($0)" } ?? ""))
        return (LeaseTicket(condition: condition.id, leaseID: lease.id), status(of: condition))
    }

    /// The client of a client-bound lease closed its connection: bring the baseline back.
    /// Returns the new status, or `nil` if the lease had already ended.
    public func release(_ ticket: LeaseTicket) -> StatusResponse? {
        guard let condition = conditions[ticket.condition], condition.policy.lease?.id == ticket.leaseID else { return nil }
        defer { dropIfIdle(condition) }
        // A sandbox's command, alone in it, usually ends before its client lets go.
        if condition.sandbox != nil, endIfNamespaceVanished(condition) { return status(of: condition) }
        endLease(condition, reason: "lease-released", detail: "client closed its connection")
        endSandboxCondition(condition)
        return status(of: condition)
    }

    /// `linkcond release`: the holder ends their own lease early and gets the baseline back.
    public func releaseLease(on id: ConditionID? = nil, by requester: Requester) throws -> StatusResponse {
        try checkRunning()
        let id = try resolved(id)
        guard let condition = conditions[id], let lease = condition.policy.lease, lease.isHeld(by: requester) else {
            throw NoLeaseError(holder: conditions[id]?.policy.lease?.holder.document)
        }
        defer { dropIfIdle(condition) }
        let previous = condition.policy.effective
        let ended = try converge(condition, to: condition.policy.wanting(baseline: condition.policy.baseline, lease: nil, now: now), replacingForeign: false)
        record(condition, from: previous, reason: "lease-released", requester: requester, detail: "ended early by its holder (\(lease.entry.profile.name))")
        ended?.onEnd?(LeaseEvent(event: .ended, reason: .released, status: status(of: condition)))
        return status(of: condition)
    }

    /// Re-reads the profile directories. A condition changes only if its own file now says
    /// something else; a file that broke or vanished keeps the values in force.
    /// `requester` is who asked (`nil` for SIGHUP), so a re-applied condition is logged with them.
    public func reload(by requester: Requester? = nil) -> ReloadResponse {
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
        for condition in orderedConditions where !stopping {
            reappliedAny = refresh(condition, from: fresh, by: requester) || reappliedAny
        }
        logger.notice("reloaded \(fresh.entries.count) profiles, \(fresh.problems.count) skipped\(reappliedAny ? ", active condition updated" : "")")
        return ReloadResponse(
            profiles: fresh.entries.count, problems: fresh.problems.map(ProfileProblem.init),
            reapplied: reappliedAny, status: status(of: defaultCondition)
        )
    }

    /// Brings the kernel to what the state files say was wanted when the previous daemon ended,
    /// for the default condition and every other one that had a state file: a lease still
    /// valid, else the baseline, else nothing. A tree that is exactly the wanted one is
    /// re-adopted (its values rewritten); anything less is rebuilt or removed.
    ///
    /// The default condition's failure is thrown (the daemon cannot serve its interface);
    /// another condition that cannot be brought back is logged, removed and forgotten.
    public func recover() throws(ShapingError) {
        var recovering = [defaultCondition]
        for id in StateStore.storedConditions(in: stateDirectory) where id != defaultID && conditions.count < Self.maximumConditions {
            guard let condition = recoverableCondition(id) else { continue }
            insert(condition)
            recovering.append(condition)
        }
        for condition in recovering {
            // A sandbox's `run` lost its lease with the previous daemon: the sandbox ends.
            condition.policy = condition.sandbox == nil ? recoveredPolicy(from: condition.stateStore?.load(), for: condition.id) : ConditionPolicy(baselineSince: now)
            persist(condition)
        }
        // One recovery per target, with every condition on it, default target first.
        var byTarget: [(KernelConvergence, [Condition])] = []
        for condition in recovering {
            if let index = byTarget.firstIndex(where: { $0.0 === condition.convergence }) {
                byTarget[index].1.append(condition)
            } else {
                byTarget.append((condition.convergence, [condition]))
            }
        }
        for (convergence, group) in byTarget {
            do {
                try recover(convergence, with: group)
            } catch {
                if group.contains(where: { $0.id == defaultID }) { throw error }
                logger.error("startup: cannot bring back the conditions on \(convergence.target.interface): \(error.message); removing them")
                try? convergence.removeAll()
                for condition in group {
                    condition.policy = ConditionPolicy(baselineSince: now)
                    record(condition, from: nil, to: "off", reason: "startup", requester: nil, detail: "could not be brought back: \(error.message)")
                }
            }
            group.forEach(dropIfIdle)
        }
        restoreForwardingIfNoSandbox()
    }

    /// Graceful stop: ends every lease (telling a waiting client why), removes all shaping,
    /// forgets the state. After it, every change is refused. Throws the first failure, after
    /// trying every condition.
    public func shutdown() throws(ShapingError) {
        stopping = true
        var failure: ShapingError?
        for condition in orderedConditions {
            endScenario(condition)
            stopTraces(condition)
            let previous = condition.policy.effective
            let lease = condition.policy.lease
            let runtime = condition.leaseRuntime
            runtime?.timer?.cancel()
            condition.leaseRuntime = nil
            condition.policy = condition.policy.wanting(baseline: nil, lease: nil, now: now)
            do {
                try condition.convergence.removeAll()
                if tearDownSandbox(of: condition) {
                    condition.stateStore?.remove()
                }
            } catch {
                logger.error("stopping: \(error)")
                failure = failure ?? error
            }
            runtime?.onEnd?(LeaseEvent(event: .ended, reason: .shutdown, status: status(of: condition)))
            if previous != nil {
                let detail = lease.map { "ended the lease on '\($0.entry.profile.name)' held by \($0.holder)" }
                record(condition, from: previous?.profile.name, to: "off", reason: "shutdown", requester: nil, detail: detail)
            }
        }
        restoreForwardingIfNoSandbox(stopping: true)
        if let failure { throw failure }
    }

    // MARK: Namespaces

    /// Returns once some condition is in a network namespace other than the daemon's, at once if
    /// one is, or when the calling task is cancelled: the namespace watch polls only while it
    /// has something to watch, so an idle daemon has no timer.
    public func untilConditionsInOtherNamespaces() async {
        guard !conditions.keys.contains(where: { $0.namespace != nil }) else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancelled before this ran: the handler below found nobody to resume.
                guard !Task.isCancelled else { return continuation.resume() }
                namespaceWaiters.append(continuation)
            }
        } onCancel: {
            Task { await self.resumeNamespaceWaiters() }
        }
    }

    private func resumeNamespaceWaiters() {
        let waiters = namespaceWaiters
        namespaceWaiters = []
        waiters.forEach { $0.resume() }
    }

    /// Ends every condition whose network namespace is gone (its container stopped, `ip netns
    /// delete`), or whose name or PID now means another namespace. The kernel objects went with
    /// the namespace; the condition leaves the set, its lease's client hears why, its state file
    /// goes, and the history says so. Returns the ids of those ended.
    @discardableResult
    public func endConditionsInVanishedNamespaces() -> [ConditionID] {
        guard namespaces != nil else { return [] }
        var ended: [ConditionID] = []
        for condition in orderedConditions where endIfNamespaceVanished(condition) {
            ended.append(condition.id)
        }
        return ended
    }

    /// Ends `condition` if its network namespace is gone; whether it did.
    package func endIfNamespaceVanished(_ condition: Condition) -> Bool {
        guard let namespaces, let namespace = condition.id.namespace else { return false }
        do {
            if try namespaces.identity(at: namespace.path) == condition.namespaceIdentity { return false }
        } catch where error.code == .namespaceGone {
            // Gone: ended below.
        } catch {
            logger.warning("cannot look at the network namespace of \(condition.id): \(error); trying again in a second")
            return false
        }
        endScenario(condition)
        stopTraces(condition)
        let previous = condition.policy.effective
        let runtime = condition.leaseRuntime
        runtime?.timer?.cancel()
        condition.leaseRuntime = nil
        condition.policy = ConditionPolicy(baselineSince: now)
        condition.convergence.forget()
        let detail = endOfNamespace(condition, gone: "\(namespace.path) is gone")
        logger.notice("the network namespace of \(condition.id) (\(namespace.path)) is gone; its condition ended with it (\(detail))")
        record(condition, from: previous?.profile.name, to: "off", reason: "namespace-ended", requester: nil, detail: detail)
        runtime?.onEnd?(LeaseEvent(event: .ended, reason: .namespaceEnded, status: status(of: condition)))
        dropIfIdle(condition)
        return true
    }

    /// Removes linkcond's objects from the namespace `condition` was made in when its own path
    /// no longer leads there but the namespace lives on (the PID it was named by exited while
    /// the container's other processes run; `ip netns delete` while a process is inside).
    /// Returns the history's detail for the end: `gone`, and through which path the objects
    /// were removed when the namespace lives on.
    private func endOfNamespace(_ condition: Condition, gone: String) -> String {
        guard let namespaces, let identity = condition.namespaceIdentity, let path = namespaces.path(of: identity) else { return gone }
        let engine = ShapingEngine(kernel: namespaces.kernel(at: path, identity: identity), logger: logger)
        do {
            try engine.remove(condition.target)
        } catch {
            logger.error("\(condition.id): its namespace lives on (\(path)), but linkcond's objects there could not be removed: \(error)")
        }
        return "\(gone); the namespace lives on, linkcond's objects in it were removed through \(path)"
    }

    // MARK: Conditions

    var defaultCondition: Condition {
        // The default condition is made in `init` and never dropped.
        conditions[defaultID]!
    }

    /// The default condition first, then the others by id.
    var orderedConditions: [Condition] {
        [defaultCondition] + conditions.values.filter { $0.id != defaultID }.sorted { $0.id < $1.id }
    }

    /// The condition `id` names (the default one for `nil`), made when it does not exist yet and
    /// its interface does. Made for a peer named by a host name, it needs the name's addresses.
    private func condition(_ id: ConditionID?, hostAddresses: [[UInt8]] = []) throws -> Condition {
        let id = try resolved(id)
        if let existing = conditions[id] { return existing }
        guard conditions.count < Self.maximumConditions else {
            throw TooManyConditionsError(limit: Self.maximumConditions)
        }
        guard id.interface != Self.loopback || id.peer?.namesServerPort == true else {
            throw LoopbackConditionError(requested: id)
        }
        let condition = try absentCondition(id, hostAddresses: hostAddresses)
        insert(condition)
        return condition
    }

    /// Whether the condition `id` names is held, with its match: one for a host name has its
    /// addresses already, and takes no others.
    public func holds(_ id: ConditionID?) -> Bool {
        (try? resolved(id)).map { conditions[$0] != nil } ?? false
    }

    /// The id `id` stands for: the default condition for `nil`; for `@PEER` the daemon's own
    /// interface, or `lo` when the peer is on this machine's loopback (`@127.0.0.1:8080`); in
    /// another namespace without an interface (`pid/PID/`), the one its default route leaves by.
    package func resolved(_ id: ConditionID?) throws -> ConditionID {
        guard var id else { return defaultID }
        guard id.interface.isEmpty else { return id }
        if let namespace = id.namespace {
            id.interface = try defaultRouteInterface(in: namespace)
        } else {
            id.interface = id.peer?.isLoopback == true ? Self.loopback : defaultID.interface
        }
        return id
    }

    /// The interface the default route of `namespace` leaves by, IPv4's before IPv6's.
    private func defaultRouteInterface(in namespace: NetworkNamespaceReference) throws -> String {
        guard let namespaces else { throw NamespaceTargetsUnavailableError() }
        let tables: (ipv4: String, ipv6: String)
        do {
            tables = try namespaces.routeTables(at: namespace.path)
        } catch {
            throw UnknownNamespaceError(namespace: namespace, reason: error.reason)
        }
        guard let interface = DefaultRoute.interface(ipv4RouteTable: tables.ipv4, ipv6RouteTable: tables.ipv6) else {
            throw NoDefaultRouteInNamespaceError(namespace: namespace)
        }
        logger.info("\(namespace): the interface of its default route is \(interface)")
        return interface
    }

    /// Which network namespace `namespace` names now.
    package func identity(of namespace: NetworkNamespaceReference) throws -> NamespaceIdentity {
        guard let namespaces else { throw NamespaceTargetsUnavailableError() }
        do {
            return try namespaces.identity(at: namespace.path)
        } catch {
            throw UnknownNamespaceError(namespace: namespace, reason: error.reason)
        }
    }

    /// A condition not (yet) held, off, on an interface that exists, in a namespace that does:
    /// `identity`, when the caller has read it already, else the one its path names now.
    package func absentCondition(
        _ id: ConditionID, identity known: NamespaceIdentity? = nil, checkingInterface: Bool = true, hostAddresses: [[UInt8]] = []
    ) throws -> Condition {
        var identity: NamespaceIdentity?
        if let namespace = id.namespace {
            identity = try known ?? self.identity(of: namespace)
            if identity == (try? namespaces?.identity(at: Self.ownNamespacePath)) {
                throw AliasedConditionError(requested: id, existing: ConditionID(interface: id.interface))
            }
            if let twin = conditions.values.first(where: {
                $0.namespaceIdentity == identity && $0.id.interface == id.interface && $0.id.namespace != id.namespace
            }) {
                throw AliasedConditionError(requested: id, existing: twin.id)
            }
        }
        let condition = makeCondition(id, identity: identity, hostAddresses: hostAddresses)
        if case .match(_, let match) = condition.slot,
           let twin = conditions.values.first(where: { other in
               guard other.convergence === condition.convergence, case .match(_, let held) = other.slot else { return false }
               return held.overlapsExactly(match)
           }) {
            throw OverlappingPeerError(requested: id, existing: twin.id)
        }
        if checkingInterface, try condition.convergence.survey().interface == nil {
            throw UnknownInterfaceError(interface: id.interface, namespace: id.namespace)
        }
        return condition
    }

    /// A condition a state file names, when it can be brought back: one in another network
    /// namespace only while that namespace is the one it was made in. One whose namespace
    /// ended while no daemon ran is recorded as ended, and its file goes.
    private func recoverableCondition(_ id: ConditionID) -> Condition? {
        let store = stateDirectory.map { StateStore(directory: $0, condition: id) }
        let state = store?.load()
        let hostAddresses = state?.hostAddresses?.compactMap(parseIPAddress) ?? []
        guard let namespace = id.namespace else { return makeCondition(id, identity: nil, slot: state?.slot, hostAddresses: hostAddresses) }
        let stored = state?.namespaceIdentity
        let now = try? namespaces?.identity(at: namespace.path)
        let sandbox = state?.sandbox.flatMap { $0 <= SandboxAddressing.maximumIndex ? SandboxAddressing(index: $0) : nil }
        guard let stored, let now, stored == now else {
            let condition = makeCondition(id, identity: stored)
            let detail = endOfNamespace(condition, gone: "\(namespace.path) ended while no daemon ran")
            logger.notice("startup: the network namespace of \(id) is gone; its condition ended with it (\(detail))")
            record(condition, from: nil, to: "off", reason: "namespace-ended", requester: nil, detail: detail)
            if let sandbox, !tearDown(sandbox, of: condition) { return nil }
            store?.remove()
            return nil
        }
        let condition = makeCondition(id, identity: now, slot: state?.slot, hostAddresses: hostAddresses)
        condition.sandbox = sandbox
        return condition
    }

    /// A condition object for `id`, on its target's shared tree; one with a match takes
    /// `slot` (its stored one, at restart) when that is free on the target, else the lowest free one,
    /// and for a host name matches `hostAddresses`.
    private func makeCondition(_ id: ConditionID, identity: NamespaceIdentity?, slot stored: UInt16? = nil, hostAddresses: [[UInt8]] = []) -> Condition {
        let convergence = targets[id.target] ?? {
            var engine = self.engine
            if let namespace = id.namespace, let identity, let namespaces {
                engine = ShapingEngine(kernel: namespaces.kernel(at: namespace.path, identity: identity), logger: logger)
            }
            return KernelConvergence(target: ShapingTarget(interface: id.interface), planner: planner, engine: engine, logger: logger)
        }()
        var slot = ConditionSlot.whole
        if let peer = id.peer {
            let taken = Set(conditions.values.filter { $0.convergence === convergence }.compactMap(\.slotNumber))
            let number = stored.flatMap { taken.contains($0) ? nil : $0 }
                ?? (1...ReservedHandles.maximumMatchSlot).first { !taken.contains($0) } ?? ReservedHandles.maximumMatchSlot
            slot = .match(number, PeerMatch(peer, hostAddresses: hostAddresses))
        }
        return Condition(
            id: id, namespaceIdentity: identity, convergence: convergence, slot: slot,
            stateStore: stateDirectory.map { StateStore(directory: $0, condition: id) }, offSince: now
        )
    }

    /// Makes `condition` one of the set, and its tree the one its target's other conditions share.
    package func insert(_ condition: Condition) {
        conditions[condition.id] = condition
        targets[condition.id.target] = condition.convergence
        if condition.id.namespace != nil {
            resumeNamespaceWaiters()
        }
    }

    /// A condition other than the default one ends with its last profile and lease: it leaves
    /// the set, and its state file goes (after its kernel objects, so a crash in between
    /// still leaves the file that tells the next daemon to remove them).
    package func dropIfIdle(_ condition: Condition) {
        guard condition.id != defaultID, condition.isIdle, conditions[condition.id] === condition else { return }
        conditions[condition.id] = nil
        // A sandbox that could not be removed keeps its state file: the next daemon tries again.
        let sandboxRemoved = tearDownSandbox(of: condition)
        if condition.sandbox != nil {
            restoreForwardingIfNoSandbox()
        }
        if sandboxRemoved {
            condition.stateStore?.remove()
        }
        let target = condition.id.target
        if !condition.convergence.isInUse, !conditions.values.contains(where: { $0.convergence === condition.convergence }) {
            targets[target] = nil
        }
    }

    private func nextLeaseID() -> UInt64 {
        lastLeaseID += 1
        return lastLeaseID
    }

    // MARK: Leases

    /// The profile a choice puts in force first; for a scenario, its first step's, with the rest.
    private func resolve(_ choice: ProfileChoice) throws -> (ProfileEntry, ScenarioStart?) {
        switch choice {
        case .named(let name): return (try catalog.entry(named: name), nil)
        case .defined(let entry): return (entry, nil)
        case .scenario(let name):
            let start = try scenarioStart(named: name)
            return (start.profile, start)
        }
    }

    package func checkRunning() throws(DaemonStoppingError) {
        if stopping { throw DaemonStoppingError() }
    }

    /// Off, recorded; an idle condition is still swept of what an earlier daemon may have left.
    private func switchOff(_ condition: Condition, by requester: Requester) throws {
        let previous = condition.policy.effective
        let displaced = try converge(condition, to: condition.policy.wanting(baseline: nil, lease: nil, now: now), replacingForeign: false)
        if previous == nil {
            if !condition.convergence.isInUse {
                try condition.convergence.removeAll()
            }
        } else {
            record(condition, from: previous, reason: "off", requester: requester, detail: nil)
        }
        notifyTakeOver(displaced, on: condition, by: requester)
    }

    /// Brings one target's tree to what its conditions' recovered policies want, and records
    /// for each how.
    private func recover(_ convergence: KernelConvergence, with group: [Condition]) throws(ShapingError) {
        // Traces start again from their beginning.
        let whole = group.first { $0.slot == .whole }?.policy.effective?.profile.paced(at: 0).profile
        let matches = group.compactMap { condition -> MatchedCondition? in
            guard case .match(let number, let match) = condition.slot, let profile = condition.policy.effective?.profile else { return nil }
            return MatchedCondition(slot: number, match: match, profile: profile.paced(at: 0).profile)
        }
        let interface = convergence.target.interface
        let outcome = try convergence.recover(whole: whole, matches: matches)
        group.forEach(followTraces)
        if case .rebuilt(let deviations) = outcome {
            for deviation in deviations.prefix(20) {
                logger.notice("startup: the tree on \(interface) differed: \(deviation)")
            }
        }
        for condition in group {
            let wanted = condition.policy.effective
            switch outcome {
            case .nothingToDo:
                break
            case .removedLeftovers:
                guard condition.slot == .whole else { break }
                logger.notice("startup: removed the linkcond tree an earlier daemon left on \(interface); nothing was to stay in force")
                record(condition, from: nil, to: "off", reason: "startup", requester: nil, detail: "removed a tree left by an earlier daemon")
            case .readopted, .rebuilt:
                guard wanted != nil else { break }
                var how = "re-adopted the tree an earlier daemon left"
                if case .rebuilt(let deviations) = outcome {
                    how = deviations.isEmpty ? "built it" : "rebuilt it: the tree left was incomplete"
                }
                logger.notice("startup: '\(wanted?.profile.name ?? "")' stays in force on \(condition.id): \(how)")
                record(condition, from: nil, to: wanted?.profile.name ?? "off", reason: "startup", requester: nil, detail: how)
                scheduleExpiry(condition)
            }
        }
    }

    /// The policy a restarted daemon starts from: the stored one, less a lease that ended
    /// while no daemon ran (expired, or bound to a client whose connection died with it).
    private func recoveredPolicy(from state: PersistedState?, for id: ConditionID) -> ConditionPolicy {
        guard let state, state.interface == id.interface, state.namespace == id.namespace?.description else { return ConditionPolicy(baselineSince: now) }
        let baseline: ProfileEntry?
        do {
            baseline = try state.baseline?.entry()
        } catch {
            logger.error("startup: ignoring the stored condition on \(id.interface): \(error)")
            return ConditionPolicy(baselineSince: now)
        }
        var lease: Lease?
        let leaseEntry: ProfileEntry?
        do {
            leaseEntry = try state.lease?.profile.entry()
        } catch {
            logger.error("startup: dropping the stored lease on \(id.interface): \(error)")
            leaseEntry = nil
        }
        if let stored = state.lease, let entry = leaseEntry {
            if stored.clientBound {
                logger.notice("startup: dropping the lease on '\(entry.profile.name)' held by \(stored.holder): its client's connection ended with the previous daemon")
            } else if let expires = stored.expires, expires <= now {
                logger.notice("startup: the lease on '\(entry.profile.name)' held by \(stored.holder) expired while no daemon ran")
            } else {
                lease = Lease(
                    id: nextLeaseID(), entry: entry, holder: Requester(document: stored.holder), since: stored.since,
                    expires: stored.expires, clientBound: false
                )
            }
        }
        return ConditionPolicy(baseline: baseline, baselineSince: state.baselineSince, lease: lease)
    }

    /// A condition's profiles as `fresh` has them now; whether the values in force changed.
    private func refresh(_ condition: Condition, from fresh: ProfileCatalog, by requester: Requester?) -> Bool {
        func refreshed(_ entry: ProfileEntry) -> ProfileEntry {
            guard !entry.isAdHoc else { return entry }
            guard let update = fresh.entries.first(where: { $0.file == entry.file }) else {
                logger.warning("reload: \(entry.file) no longer loads; '\(entry.profile.name)' keeps its values")
                return entry
            }
            return update
        }
        let policy = condition.policy
        var wanted = policy.wanting(baseline: policy.baseline.map(refreshed), lease: policy.lease, now: now)
        if let lease = policy.lease {
            wanted.lease?.entry = refreshed(lease.entry)
        }
        guard wanted != policy else { return false }
        let before = policy.effective
        do {
            try converge(condition, to: wanted, replacingForeign: false, keepingScenario: true)
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

    /// Tells the client of a lease that `requester` forced its way past that it is over.
    private func notifyTakeOver(_ displaced: Condition.LeaseRuntime?, on condition: Condition, by requester: Requester) {
        guard let displaced else { return }
        logger.notice("lease \(displaced.leaseID) on \(condition.id) taken over by \(requester)")
        displaced.onEnd?(LeaseEvent(event: .ended, reason: .takenOver, by: requester.document, status: status(of: condition)))
    }

    /// One timer for a condition's current lease's end: no wakeups at all while there is no lease.
    private func scheduleExpiry(_ condition: Condition, onEnd: (@Sendable (LeaseEvent) -> Void)? = nil) {
        guard let lease = condition.policy.lease, condition.leaseRuntime?.leaseID != lease.id else { return }
        var runtime = Condition.LeaseRuntime(leaseID: lease.id, onEnd: onEnd)
        if let expires = lease.expires {
            let ticket = LeaseTicket(condition: condition.id, leaseID: lease.id)
            let delay = TimeAmount.milliseconds(Int64((expires.timeIntervalSince(now) * 1000).rounded(.up)))
            runtime.timer = eventLoop.scheduleTask(in: max(delay, .zero)) {
                Task { await self.expire(ticket) }
            }
        }
        condition.leaseRuntime = runtime
    }

    private func expire(_ ticket: LeaseTicket) {
        guard let condition = conditions[ticket.condition], condition.policy.lease?.id == ticket.leaseID else { return }
        defer { dropIfIdle(condition) }
        let ended = endLease(condition, reason: "lease-expired", detail: nil)
        endSandboxCondition(condition)
        ended?.onEnd?(LeaseEvent(event: .ended, reason: .expired, status: status(of: condition)))
    }

    /// Ends a condition's current lease and brings its baseline back; returns the ended lease's
    /// runtime. If the kernel refuses, the lease's condition stays in force as the baseline,
    /// and the error is logged.
    @discardableResult
    private func endLease(_ condition: Condition, reason: String, detail: String?) -> Condition.LeaseRuntime? {
        guard let lease = condition.policy.lease else { return nil }
        var ended: Condition.LeaseRuntime?
        do {
            ended = try converge(condition, to: condition.policy.wanting(baseline: condition.policy.baseline, lease: nil, now: now), replacingForeign: false)
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
        _ condition: Condition, to wanted: ConditionPolicy, replacingForeign: Bool, keepingScenario: Bool = false,
        onEnd: (@Sendable (LeaseEvent) -> Void)? = nil
    ) throws -> Condition.LeaseRuntime? {
        let old = condition.policy
        condition.policy = wanted
        persist(condition)
        do {
            try condition.converge(to: pacedProfile(wanted.effective?.profile, on: condition), replacingForeign: replacingForeign)
        } catch {
            condition.policy = old
            persist(condition)
            throw error
        }
        followTraces(condition)
        if !keepingScenario {
            endScenario(condition)
        }
        // Only now is an old lease really gone; after a failure it stays, timer and all.
        var ended: Condition.LeaseRuntime?
        if let runtime = condition.leaseRuntime, runtime.leaseID != wanted.lease?.id {
            runtime.timer?.cancel()
            condition.leaseRuntime = nil
            ended = runtime
        }
        scheduleExpiry(condition, onEnd: onEnd)
        return ended
    }

    package func persist(_ condition: Condition) {
        guard let stateStore = condition.stateStore else { return }
        let policy = condition.policy
        let state = PersistedState(
            interface: condition.id.interface,
            namespace: condition.id.namespace?.description,
            namespaceIdentity: condition.namespaceIdentity,
            baseline: policy.baseline.map(PersistedState.StoredProfile.init),
            baselineSince: policy.baselineSince,
            lease: policy.lease.map {
                PersistedState.StoredLease(
                    profile: PersistedState.StoredProfile($0.entry), holder: $0.holder.document,
                    since: $0.since, expires: $0.expires, clientBound: $0.clientBound
                )
            },
            slot: condition.slotNumber,
            sandbox: condition.sandbox?.index,
            hostAddresses: condition.hostAddresses?.map(formatIPAddress)
        )
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
    init(document: HolderDocument) {
        self.init(uid: document.uid, gid: 0, pid: document.pid, user: document.user, command: document.command)
    }
}
