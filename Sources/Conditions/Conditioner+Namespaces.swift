#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HostFacts
import IPAddressText
import LinkCondVocabulary
import Logging
import Netlink
import Profiles
import Sandboxes
import Shaping

// Conditions in other network namespaces: which namespace and interface an id names, and
// the watch that ends a condition with its namespace.

extension Conditioner {
    /// Returns once some condition is in a network namespace other than the daemon's, at once if
    /// one is, or when the calling task is cancelled: the namespace watch polls only while it
    /// has something to watch, so an idle daemon has no timer.
    public func untilConditionsInOtherNamespaces() async {
        guard !registry.hasConditionsInOtherNamespaces else { return }
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

    func resumeNamespaceWaiters() {
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
        for var condition in orderedConditions {
            guard endIfNamespaceVanished(&condition) else { continue }
            settle(condition)
            ended.append(condition.id)
        }
        return ended
    }

    /// Ends `condition` if its network namespace is gone; whether it did. The caller settles it.
    func endIfNamespaceVanished(_ condition: inout Condition) -> Bool {
        guard let namespaces, let namespace = condition.id.namespace else { return false }
        do {
            if try namespaces.identity(at: namespace.path) == condition.namespaceIdentity { return false }
        } catch where error.code == .namespaceGone {
            // Gone: ended below.
        } catch {
            logger.warning("cannot look at the network namespace of \(condition.id): \(error); trying again in a second")
            return false
        }
        let runtime = stopRuntime(of: &condition)
        let previous = condition.policy.effective
        condition.policy = ConditionPolicy(baselineSince: now)
        condition.convergence.forget()
        let detail = endOfNamespace(condition, gone: "\(namespace.path) is gone")
        logger.notice("the network namespace of \(condition.id) (\(namespace.path)) is gone; its condition ended with it (\(detail))")
        record(condition, from: previous?.profile.name, to: "off", reason: "namespace-ended", requester: nil, detail: detail)
        runtime?.onEnd?(LeaseEnd(reason: .namespaceEnded, condition: snapshot(of: condition)))
        return true
    }

    /// Removes linkcond's objects from the namespace `condition` was made in when its own path
    /// no longer leads there but the namespace lives on (the PID it was named by exited while
    /// the container's other processes run; `ip netns delete` while a process is inside).
    /// Returns the history's detail for the end: `gone`, and through which path the objects
    /// were removed when the namespace lives on.
    func endOfNamespace(_ condition: Condition, gone: String) -> String {
        guard let namespaces, let identity = condition.namespaceIdentity, let path = namespaces.path(of: identity) else { return gone }
        let engine = ShapingEngine(kernel: namespaces.kernel(at: path, identity: identity), logger: logger)
        do {
            try engine.remove(condition.target)
        } catch {
            logger.error("\(condition.id): its namespace lives on (\(path)), but linkcond's objects there could not be removed: \(error)")
        }
        return "\(gone); the namespace lives on, linkcond's objects in it were removed through \(path)"
    }

    /// The id `id` stands for: the default condition for `nil`; for `@PEER` the daemon's own
    /// interface, or `lo` when the peer is on this machine's loopback (`@127.0.0.1:8080`); in
    /// another namespace without an interface (`pid/PID/`), the one its default route leaves by.
    package func resolved(_ id: ConditionID?) throws(ConditionsRefusal) -> ConditionID {
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
    func defaultRouteInterface(in namespace: NetworkNamespaceReference) throws(ConditionsRefusal) -> String {
        guard let namespaces else { throw ConditionsRefusal(NamespaceTargetsUnavailableError()) }
        let tables: (ipv4: String, ipv6: String)
        do {
            tables = try namespaces.routeTables(at: namespace.path)
        } catch {
            throw ConditionsRefusal(UnknownNamespaceError(namespace: namespace, reason: error.reason))
        }
        guard let interface = DefaultRoute.interface(ipv4RouteTable: tables.ipv4, ipv6RouteTable: tables.ipv6) else {
            throw ConditionsRefusal(NoDefaultRouteInNamespaceError(namespace: namespace))
        }
        logger.info("\(namespace): the interface of its default route is \(interface)")
        return interface
    }

    /// Which network namespace `namespace` names now.
    package func identity(of namespace: NetworkNamespaceReference) throws(ConditionsRefusal) -> NamespaceIdentity {
        guard let namespaces else { throw ConditionsRefusal(NamespaceTargetsUnavailableError()) }
        do {
            return try namespaces.identity(at: namespace.path)
        } catch {
            throw ConditionsRefusal(UnknownNamespaceError(namespace: namespace, reason: error.reason))
        }
    }
}
