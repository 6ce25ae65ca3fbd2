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
        guard namespaces.kernels != nil else { return [] }
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
        guard namespaces.hasVanished(condition) == true, let namespace = condition.id.namespace else { return false }
        let runtime = stopRuntime(of: &condition)
        let previous = condition.policy.effective
        condition.policy = ConditionPolicy(baselineSince: now)
        condition.convergence.forget()
        let detail = namespaces.endOfNamespace(condition, gone: "\(namespace.path) is gone")
        logger.notice("the network namespace of \(condition.id) (\(namespace.path)) is gone; its condition ended with it (\(detail))")
        record(condition, from: previous?.profile.name, to: "off", reason: "namespace-ended", requester: nil, detail: detail)
        runtime?.onEnd?(LeaseEnd(reason: .namespaceEnded, condition: snapshot(of: condition)))
        return true
    }

    /// The id `id` stands for: the default condition for `nil`; for `@PEER` the daemon's own
    /// interface, or `lo` when the peer is on this machine's loopback (`@127.0.0.1:8080`); in
    /// another namespace without an interface (`pid/PID/`), the one its default route leaves by.
    package func resolved(_ id: ConditionID?) throws(ConditionsRefusal) -> ConditionID {
        guard var id else { return defaultID }
        guard id.interface.isEmpty else { return id }
        if let namespace = id.namespace {
            id.interface = try namespaces.defaultRouteInterface(in: namespace)
        } else {
            id.interface = id.peer?.isLoopback == true ? Self.loopback : defaultID.interface
        }
        return id
    }
}
